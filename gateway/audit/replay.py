"""Policy replay: re-decide every call an audit log recorded with another policy.

Each decided call of the log (``tool.call``, ``tool.denied``, ``tool.approval.requested``,
``tool.deferred``; the first of them per call id) is decided again by the new policy, in log
order, with what the log holds of it: the tool and server names, the principal's id and tenant,
the session id and the arguments as recorded (redacted where rules said so). Each session's
history is rebuilt as it happened: a call counts in its session (``principal:session``, as the
gateway keys it) when its ``tool.result`` is logged, ``ok`` unless the result is an error, and a
successful ``load_NAME`` loads its group; a held call that did not run within its hold counts
when the hold ended, not ``ok`` (the caller was answered "pending", or an approver refused it);
a refused call does not count. The history is what was recorded, not what the new policy would
have let happen.

What the log does not hold is absent from the replay, and the report's notes say so: tool
annotations and flags (tools are rebuilt from their names), principal roles and claims, and
the true values of redacted arguments.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from gateway.audit.log import AuditEntry
from gateway.audit.replay_labels import newly_held, recorded_labels
from gateway.config.servers import EXTERNAL_SERVER
from gateway.events.redact import MASK
from gateway.resources.policy_guard import RESOURCE_READ
from gateway.sessions import session_key
from gateway.sessions.group_loaders import LOADER_PREFIX, LOADER_SERVER
from policies.engine import PolicyEngine
from policies.session import SessionState
from policies.tool_labels import ServerLabels
from toolsets.context import CallContext, Principal
from toolsets.decision import DEFAULT_APPROVAL, EFFECT_RANK, Decision
from toolsets.tooldef import ToolDef

__all__ = [
    "DECIDED_KINDS",
    "HELD_KINDS",
    "READ_KINDS",
    "DiffRow",
    "RecordedCall",
    "ReplayReport",
    "recorded_call",
    "replay",
]

DECIDED_KINDS: Final = ("tool.call", "tool.denied", "tool.approval.requested", "tool.deferred")
"""Audit entries that carry a call's policy decision."""
HELD_KINDS: Final = ("tool.approval.requested", "tool.deferred")
"""Decisions that hold the call: answered when run, or with an error once the hold ends."""
READ_KINDS: Final = (*DECIDED_KINDS, "tool.result")
"""What replay reads of the log (results feed the session history)."""

NOTE_TOOLS: Final = (
    "tools are rebuilt from the recorded tool and server names: annotations and flags are "
    "unknown (conditions reading tool.annotations or tool.flags, and defaults.hide_flagged, "
    "see none)"
)
NOTE_PRINCIPALS: Final = (
    "principals are replayed by id and tenant: roles and claims are not on record (rules "
    "selecting role:NAME or reading principal.roles/claims match as for a caller without them)"
)
NOTE_REDACTED: Final = (
    "{count} replayed call{s} had redacted arguments: the new policy saw '[REDACTED]' where "
    "rules masked them"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedCall:
    """A call as the audit log recorded its decision.

    Attributes:
        seq: The audit entry's sequence number; ``ts`` its time.
        call_id: The call id.
        tool: A minimal tool definition (name, server, upstream name; no annotations or flags).
        principal: The caller's id and tenant (roles and claims are not recorded).
        session_id: The downstream session, when the call had one.
        args: The arguments as recorded (redacted where rules said so).
        effect: The recorded effect; ``rule_id`` the recorded winning rule.
        redacted: Whether some argument value was masked before it was recorded.
        labels: The tool's labels its decision recorded (the replay's base labels), if any.
    """

    seq: int
    ts: str
    call_id: str | None
    tool: ToolDef
    principal: Principal
    session_id: str | None
    args: Mapping[str, Any]
    effect: str
    rule_id: str | None
    redacted: bool
    labels: ServerLabels | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRow:
    """Replayed calls of one tool with the same old effect, new effect and new rule.

    Attributes:
        tool: The exposed tool name.
        old_effect: The recorded effect; ``new_effect`` the replayed one.
        new_rule_id: The rule deciding the replay (None: the default).
        count: How many calls; ``redacted`` how many of them had redacted arguments.
    """

    tool: str
    old_effect: str
    new_effect: str
    new_rule_id: str | None
    count: int
    redacted: int

    @property
    def changed(self) -> bool:
        """Whether the replay decided another effect."""
        return self.old_effect != self.new_effect


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """What changed when the recorded calls were decided by another policy.

    Attributes:
        rows: Every combination seen, changed ones first, then by tool.
        calls: Calls replayed (within ``since``); ``changed`` of them got another effect;
            ``redacted`` of them had redacted arguments.
        first, last: Times of the first and last replayed call (None: no call).
        skipped: Decision entries that could not be read as a call.
        notes: What the replay could not know.
        held: The calls the new policy holds (``ask``) and the recorded decision did not.
    """

    rows: tuple[DiffRow, ...]
    calls: int
    changed: int
    redacted: int
    first: str | None
    last: str | None
    skipped: int
    notes: tuple[str, ...]
    held: tuple[dict[str, Any], ...] = ()

    def to_json(self, *, everything: bool = False) -> dict[str, Any]:
        """JSON-ready data; ``rows`` holds the changed rows only unless ``everything``."""
        rows = [r for r in self.rows if everything or r.changed]
        return {
            "calls": self.calls,
            "changed": self.changed,
            "unchanged": self.calls - self.changed,
            "redacted": self.redacted,
            "first": self.first,
            "last": self.last,
            "skipped": self.skipped,
            "rows": [
                {
                    "tool": r.tool,
                    "old_effect": r.old_effect,
                    "new_effect": r.new_effect,
                    "new_rule_id": r.new_rule_id,
                    "count": r.count,
                    "redacted": r.redacted,
                }
                for r in rows
            ],
            "notes": list(self.notes),
            "newly_held": list(self.held),
        }


def _masked(value: Any) -> bool:
    if isinstance(value, str):
        return MASK in value
    if isinstance(value, Mapping):
        return any(_masked(item) for item in value.values())
    if isinstance(value, list):
        return any(_masked(item) for item in value)
    return False


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def recorded_call(entry: AuditEntry) -> RecordedCall | None:
    """The call a decision entry records, or None when the entry lacks what replay needs."""
    body = entry.body if isinstance(entry.body, Mapping) else {}
    data = body.get("data")
    if not isinstance(data, Mapping):
        return None
    decision, args, name = data.get("decision"), data.get("args"), _text(data, "tool")
    if not (isinstance(decision, Mapping) and isinstance(args, Mapping) and name):
        return None
    effect, principal = decision.get("effect"), _text(data, "principal") or "anonymous"
    if effect not in EFFECT_RANK:
        return None
    server = _text(data, "server") or ""
    tool = ToolDef(name=name, server=server, upstream_name=_text(data, "upstream_tool") or name)
    return RecordedCall(
        seq=entry.seq,
        ts=entry.ts,
        call_id=_text(data, "call_id"),
        tool=tool,
        principal=Principal(id=principal, tenant=_text(data, "tenant")),
        session_id=_text(data, "session_id"),
        args=args,
        effect=effect,
        rule_id=_text(decision, "rule_id"),
        redacted=_masked(args),
        labels=recorded_labels(decision),
    )


def _hold_seconds(entry: AuditEntry) -> float:
    """How long the caller of a held call waited (``tool.deferred`` does not say: the default)."""
    data = entry.body.get("data") if isinstance(entry.body, Mapping) else None
    hold = data.get("hold_seconds") if isinstance(data, Mapping) else None
    return float(hold) if isinstance(hold, int | float) else DEFAULT_APPROVAL.hold


def _after(ts: str, seconds: float) -> str:
    """The audit timestamp ``seconds`` after ``ts``."""
    moment = datetime.fromisoformat(ts.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class _Replayer:
    """Feeds audit entries in log order; keeps session histories and the tally."""

    engine: PolicyEngine
    since: str | None
    sessions: dict[str, SessionState] = field(default_factory=dict)
    running: dict[str, RecordedCall] = field(default_factory=dict)
    held: dict[str, tuple[RecordedCall, str]] = field(default_factory=dict)
    tally: Counter[tuple[str, str, str, str | None]] = field(default_factory=Counter)
    redacted: Counter[tuple[str, str, str, str | None]] = field(default_factory=Counter)
    first: str | None = None
    last: str | None = None
    skipped: int = 0
    now_held: list[dict[str, Any]] = field(default_factory=list)

    def feed(self, entry: AuditEntry) -> None:
        if self.held:
            self._expire(entry.ts)
        if entry.kind == "tool.result":
            self._result(entry)
            return
        call = recorded_call(entry)
        if call is None:
            self.skipped += 1
            return
        if call.call_id is not None and not self._new_attempt(call, entry):
            return
        if self.since is None or call.ts >= self.since:
            self._count(call, self.decide(call))

    def _new_attempt(self, call: RecordedCall, entry: AuditEntry) -> bool:
        """Track the call until it is answered; False when ``entry`` is a later stage of an
        attempt already decided (a held call approved within its hold runs now)."""
        call_id = str(call.call_id)
        if call_id in self.held:
            self.running[call_id] = self.held.pop(call_id)[0]
            return False
        if call_id in self.running:
            return False
        if entry.kind in HELD_KINDS:
            self.held[call_id] = (call, _after(entry.ts, _hold_seconds(entry)))
        elif call.effect != "deny":  # a refused call is not counted in its session
            self.running[call_id] = call
        return True

    def _expire(self, now: str) -> None:
        """Held calls whose hold ended unanswered were answered with an error ("pending", or
        refused by an approver): the gateway counted them, not ``ok``."""
        for call_id, (call, deadline) in list(self.held.items()):
            if deadline < now:
                del self.held[call_id]
                self._answered(call, ok=False)

    def decide(self, call: RecordedCall) -> Decision:
        """The new policy's decision, as the gateway's decider would make it."""
        state = self._session(call)
        decision = self.engine.evaluate_call(
            call.tool, call.args, call.principal, state, call.labels
        )
        if decision.effect == "allow" and call.tool.server == EXTERNAL_SERVER:
            return replace(decision, effect="defer")  # external tools are answered by workers
        return decision

    def _count(self, call: RecordedCall, decision: Decision) -> None:
        key = (call.tool.name, call.effect, decision.effect, decision.rule_id)
        self.tally[key] += 1
        if decision.effect == "ask" and call.effect != "ask":
            self.now_held.append(newly_held(call, decision))
        self.redacted[key] += call.redacted
        self.first = self.first or call.ts
        self.last = call.ts

    def _result(self, entry: AuditEntry) -> None:
        data = entry.body.get("data") if isinstance(entry.body, Mapping) else None
        call_id = data.get("call_id") if isinstance(data, Mapping) else None
        call = self.running.pop(call_id, None) if isinstance(call_id, str) else None
        if call is not None and isinstance(data, Mapping):
            self._answered(call, ok=data.get("is_error") is not True)

    def _answered(self, call: RecordedCall, *, ok: bool) -> None:
        state = self._session(call)
        state.record(call.tool.name, call.args, ok=ok)
        tool = call.tool
        if ok:  # as the gateway did: the tool's source labels enter the session
            labels = self.engine.labels
            labels.add_to(state, tool, call_id=call.call_id or "", at=0.0, server=call.labels)
        if ok and tool.server == LOADER_SERVER and tool.name.startswith(LOADER_PREFIX):
            state.load_group(tool.name.removeprefix(LOADER_PREFIX))  # as the loader did

    def _session(self, call: RecordedCall) -> SessionState:
        key = session_key(CallContext(principal=call.principal, session_id=call.session_id))
        state = self.sessions.get(key)
        if state is None:
            state = self.sessions[key] = SessionState(call.session_id or key)
        return state

    def report(self) -> ReplayReport:
        rows = sorted(
            (
                DiffRow(
                    tool=tool,
                    old_effect=old,
                    new_effect=new,
                    new_rule_id=rule,
                    count=count,
                    redacted=self.redacted[(tool, old, new, rule)],
                )
                for (tool, old, new, rule), count in self.tally.items()
            ),
            key=lambda r: (not r.changed, r.tool, r.old_effect, r.new_effect, r.new_rule_id or ""),
        )
        redacted = sum(self.redacted.values())
        notes = [NOTE_TOOLS, NOTE_PRINCIPALS]
        if redacted:
            notes.append(NOTE_REDACTED.format(count=redacted, s="s"[: redacted != 1]))
        return ReplayReport(
            rows=tuple(rows),
            calls=sum(self.tally.values()),
            changed=sum(r.count for r in rows if r.changed),
            redacted=redacted,
            first=self.first,
            last=self.last,
            skipped=self.skipped,
            notes=tuple(notes),
            held=tuple(self.now_held),
        )


def replay(
    entries: Iterable[AuditEntry], engine: PolicyEngine, *, since: str | None = None
) -> ReplayReport:
    """Decide the calls of ``entries`` (audit entries in log order, `READ_KINDS`) again.

    Args:
        entries: Audit entries, oldest first (others than `READ_KINDS` are ignored).
        engine: The policy to decide with.
        since: Count only calls logged at or after this time (an audit timestamp such as
            ``2025-01-31T00:00:00.000000Z``); earlier calls still build session histories.
    """
    replayer = _Replayer(engine, since)
    for entry in entries:
        if entry.kind in READ_KINDS and not _resource_read(entry):
            replayer.feed(entry)
    return replayer.report()


def _resource_read(entry: AuditEntry) -> bool:
    """Whether ``entry`` is of a held resource read: resource rules decide those, not tools'."""
    data = entry.body.get("data") if isinstance(entry.body, Mapping) else None
    return isinstance(data, Mapping) and data.get("tool") == RESOURCE_READ
