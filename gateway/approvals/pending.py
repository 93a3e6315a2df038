"""`PendingCall`: one held tool call, waiting for a human (approval) or a worker (external)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, NotRequired, TypedDict, Unpack, get_args

from toolsets.canonical import canonical_json, sha256_hex
from toolsets.decision import ApprovalStage, GrantScope

__all__ = [
    "MUTABLE_FIELDS",
    "TERMINAL_STATES",
    "CallBinding",
    "Decision",
    "HumanDecision",
    "Kind",
    "PendingCall",
    "State",
    "Vote",
]

Kind = Literal["approval", "external", "connect"]
State = Literal[
    "pending", "approved", "denied", "expired", "cancelled", "executing", "done", "failed"
]
HumanDecision = Literal["approve", "deny", "edit", "respond"]
Decision = Literal["approve", "deny", "edit", "respond", "expire", "cancel", "result", "error"]

TERMINAL_STATES: Final[frozenset[State]] = frozenset(
    {"denied", "expired", "cancelled", "done", "failed"}
)
MUTABLE_FIELDS: Final[frozenset[str]] = frozenset(
    {
        "decided_by",
        "decision",
        "channel",
        "message",
        "override_args",
        "result",
        "error",
        "retry_after",
        "delivered",
        "votes",
        "stage",
        "grant_id",
    }
)
"""Fields a transition may change; everything else is fixed when the call is created."""

_STATES: Final = frozenset(get_args(State))
_KINDS: Final = frozenset(get_args(Kind))
_OPTIONAL: Final = frozenset(
    {
        "principal_roles",
        "tenant",
        "grants",
        "grant_max",
        "stages",
        "break_glass",
        "traceparent",
        "client",
        "decided_at",
    }
)
"""Fields older records may lack (they take their defaults)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Vote:
    """One approving vote in a stage of a staged approval.

    Attributes:
        stage: The stage it counts in (0-based).
        by: The voter's principal id.
        at: Unix seconds.
        channel: Where it came from (api, cli, web).
    """

    stage: int
    by: str
    at: float
    channel: str

    def to_json(self) -> dict[str, Any]:
        """``{"stage", "by", "at", "channel"}``."""
        return {"stage": self.stage, "by": self.by, "at": self.at, "channel": self.channel}


class CallBinding(TypedDict):
    """The facts a new `PendingCall` is bound to; the attributes of the same name."""

    kind: Kind
    call_id: str
    principal: str
    session_id: str | None
    tool: str
    server: str
    upstream_tool: str
    tool_pin: str
    policy_version: str
    rule_id: str | None
    reason: str
    principal_roles: NotRequired[tuple[str, ...]]
    tenant: NotRequired[str | None]
    grants: NotRequired[tuple[GrantScope, ...]]
    grant_max: NotRequired[float | None]
    stages: NotRequired[tuple[ApprovalStage, ...]]
    break_glass: NotRequired[tuple[str, ...]]
    traceparent: NotRequired[str | None]
    client: NotRequired[dict[str, Any] | None]


def _json_copy(value: Any) -> Any:
    """A detached copy of a JSON value; raises `TypeError`/`ValueError` when it is not JSON."""
    return json.loads(canonical_json(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingCall:
    """A held tool call and everything it is bound to.

    The record is immutable; the store replaces it on every transition. The gateway executes
    from ``effective_args`` (the stored copy), never from arguments re-sent by a client.

    Attributes:
        id: Unguessable id (``ap_...``), safe to show to the caller and the approver.
        kind: ``approval`` (a human decides), ``external`` (a worker executes and posts a
            result) or ``connect`` (the caller connects their account first; `gateway.connect`).
        state: Where the call is in its lifecycle; see `gateway.approvals.store.PendingStore`.
        call_id: The id of the tool call that created it.
        principal: Id of the principal that made the call.
        session_id: The downstream session, when known.
        tool: The exposed tool name.
        server: The upstream server id.
        upstream_tool: The tool name on the upstream server.
        tool_pin: Hash of the tool definition when the call was held.
        args: The arguments as requested (JSON object); ``args_sha256`` is their canonical hash.
        args_sha256: SHA-256 of the canonical JSON of ``args``; identifies a re-issued call.
        policy_version: Version of the policy that held the call.
        rule_id: Id of the rule that matched, when one did.
        reason: Why the call is held (shown to the approver).
        approvers: Principals or roles allowed to decide.
        decisions: The decisions offered (subset of approve, deny, edit, respond).
        created_at: Unix seconds.
        expires_at: Unix seconds; a pending call past it becomes ``expired``.
        updated_at: Unix seconds of the last transition.
        decided_by: Who made the decision (approver id, ``worker``...), when decided.
        decision: The decision taken (approve, deny, edit, respond, expire, cancel, result, error).
        channel: Where the decision came from (api, cli, web, elicitation, input_required...).
        message: A deny message for the model, or the text of a ``respond`` decision.
        override_args: Arguments set by an ``edit`` decision; executed instead of ``args``.
        result: The tool result as MCP wire JSON (``content``, ``structuredContent``, ``isError``).
        error: Why the call failed, when it did.
        retry_after: Seconds after which a worker suggests retrying a failed call.
        delivered: True once the outcome was handed to a caller; see ``PendingStore.deliver``.
        principal_roles: The caller's roles when it called.
        tenant: The caller's tenant.
        grants: How far an approval may reach (``once``, ``session``, ``tool``).
        grant_max: The longest grant an approval may make, in seconds (None: only ``once``).
        stages: Staged approval, decided in order (empty: one decision by any approver).
        votes: The approving votes recorded so far, in order.
        stage: The current stage (``len(stages)`` once every stage approved).
        break_glass: Who may approve at once with a reason, skipping remaining stages.
        grant_id: The grant the approval made, if it made one.
        traceparent: The W3C trace context of the step that held the call, when traced: its
            hold span and a re-issued call's link point there (`gateway.telemetry`).
        client: What the calling client said it is (``name``, ``version``: its claim) and
            speaks (``era``, ``protocol_version``, ``transport``), for approvers.
        decided_at: Unix seconds of the transition that set ``decision`` (kept when the call
            then runs; ``updated_at`` moves on), for time-to-decision figures.
    """

    id: str
    kind: Kind
    state: State
    call_id: str
    principal: str
    session_id: str | None
    tool: str
    server: str
    upstream_tool: str
    tool_pin: str
    args: dict[str, Any]
    args_sha256: str
    policy_version: str
    rule_id: str | None
    reason: str
    approvers: tuple[str, ...]
    decisions: tuple[HumanDecision, ...]
    created_at: float
    expires_at: float
    updated_at: float
    decided_by: str | None = None
    decision: Decision | None = None
    channel: str | None = None
    message: str | None = None
    override_args: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    retry_after: float | None = None
    delivered: bool = False
    principal_roles: tuple[str, ...] = ()
    tenant: str | None = None
    grants: tuple[GrantScope, ...] = ("once",)
    grant_max: float | None = None
    stages: tuple[ApprovalStage, ...] = ()
    votes: tuple[Vote, ...] = ()
    stage: int = 0
    break_glass: tuple[str, ...] = ()
    grant_id: str | None = None
    traceparent: str | None = None
    client: dict[str, Any] | None = None
    decided_at: float | None = None

    @classmethod
    def new(
        cls,
        *,
        args: Mapping[str, Any],
        ttl: float,
        approvers: tuple[str, ...] = (),
        decisions: tuple[HumanDecision, ...] = ("approve", "deny"),
        now: float | None = None,
        **binding: Unpack[CallBinding],
    ) -> PendingCall:
        """A fresh ``pending`` call: new id, a detached copy of ``args`` and its hash.

        Args:
            args: The arguments as requested (copied).
            ttl: Seconds until the call expires.
            approvers: Principals or roles allowed to decide.
            decisions: The decisions offered.
            now: Creation time in unix seconds (default: the current time).
            **binding: What the call is bound to (see `CallBinding`).

        Raises:
            TypeError: ``args`` is not JSON-serialisable.
        """
        created = time.time() if now is None else now
        stored = _json_copy(dict(args))
        return cls(
            id="ap_" + secrets.token_urlsafe(12),
            state="pending",
            args=stored,
            args_sha256=sha256_hex(stored),
            approvers=tuple(approvers),
            decisions=tuple(decisions),
            created_at=created,
            expires_at=created + ttl,
            updated_at=created,
            **binding,
        )

    @property
    def is_terminal(self) -> bool:
        """True when no further transition is possible."""
        return self.state in TERMINAL_STATES

    @property
    def effective_args(self) -> dict[str, Any]:
        """The arguments to execute: the edited ones when an ``edit`` set them, else ``args``."""
        return self.args if self.override_args is None else self.override_args

    def to_json(self) -> dict[str, Any]:
        """This record as a JSON object (tuples become lists, stages and votes objects)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        out["stages"] = [{"approvers": list(s.approvers), "min": s.min} for s in self.stages]
        out["votes"] = [vote.to_json() for vote in self.votes]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PendingCall:
        """Rebuild a record from `to_json` output.

        Raises:
            ValueError: A key is missing or unknown, or ``state``/``kind`` is not a known value.
        """
        names = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.name not in MUTABLE_FIELDS | _OPTIONAL}
        if unknown := set(data) - names:
            raise ValueError(f"Unknown pending-call keys: {sorted(unknown)}")
        if missing := required - set(data):
            raise ValueError(f"Missing pending-call keys: {sorted(missing)}")
        if data["state"] not in _STATES or data["kind"] not in _KINDS:
            raise ValueError(f"Invalid pending call state/kind: {data['state']!r}/{data['kind']!r}")
        values = dict(data)
        values["approvers"] = tuple(values["approvers"])
        values["decisions"] = tuple(values["decisions"])
        values["principal_roles"] = tuple(values.get("principal_roles", ()))
        values["grants"] = tuple(values.get("grants", ("once",)))
        values["break_glass"] = tuple(values.get("break_glass", ()))
        values["stages"] = tuple(
            ApprovalStage(approvers=tuple(s["approvers"]), min=s["min"])
            for s in values.get("stages", ())
        )
        values["votes"] = tuple(Vote(**vote) for vote in values.get("votes", ()))
        return cls(**values)
