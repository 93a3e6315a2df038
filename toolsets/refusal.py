"""`Refusal`: a call lockgate did not run, as the model and its agent framework read it.

Every refusal the model reads (a policy deny, a locked session gate, an approver's denial, an
expired or withdrawn approval, a quarantined tool, a rate limit, a missing connection, an
inspector's finding, a script hook or sandbox limit) is a tool error result of one shape:

- ``content``: the human sentence, first (and alone);
- ``isError``: true;
- ``_meta["lockgate/refusal"]``: ``{kind, message, rule, retryAfter, unblock, ...}`` (camelCase,
  as MCP names fields), always;
- ``structuredContent``: ``{"lockgate/refusal": {...}}`` as well, but only when the tool is known
  and declares no ``outputSchema`` (a tool that does must answer structured content matching it,
  so the refusal stays in ``_meta`` there).

A call that reached no tool because something failed (an upstream down, lost or too slow, the
audit log unwritable) is not a refusal: it carries ``_meta["lockgate/error"]`` (`failure_result`)
instead, so a framework can tell "denied by policy" from "upstream failed"; an unknown (or
hidden) tool is a JSON-RPC error, not a result at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from mcp_types import TextContent

from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = [
    "ERROR_META",
    "REFUSAL_KINDS",
    "REFUSAL_META",
    "FailureKind",
    "Refusal",
    "RefusalKind",
    "Unblock",
    "UnblockAction",
    "failure_of",
    "failure_result",
    "refusal_of",
    "refusal_result",
]

REFUSAL_META: Final = "lockgate/refusal"
"""``_meta`` key (and ``structuredContent`` key) of a refused call's result."""
ERROR_META: Final = "lockgate/error"
"""``_meta`` key of a call that failed before reaching a tool (not a refusal)."""

RefusalKind = Literal[
    "denied",
    "session_locked",
    "approval_denied",
    "approval_expired",
    "approval_cancelled",
    "tool_changed",
    "too_many_pending",
    "quarantined",
    "rate_limited",
    "not_connected",
    "inspector",
    "hook",
    "sandbox_limit",
]
"""Why a call was refused (see docs/refusals.md for each)."""
REFUSAL_KINDS: Final[frozenset[str]] = frozenset(get_args(RefusalKind))

UnblockAction = Literal[
    "ask_approver",
    "call_first",
    "retry_after",
    "retry_later",
    "wait_for_pending",
    "reissue",
    "connect",
    "change_arguments",
    "none",
]
"""What would unblock a refused call: ask a person (an approver, an operator) to allow it; call
``tool`` first; retry after ``retryAfter`` seconds; retry later (capacity, no time known); wait
until held calls are decided; issue the call again (a fresh approval request); connect an account
at ``url``; call with other arguments; nothing the agent can do."""

FailureKind = Literal["upstream_unavailable", "upstream_timeout", "gateway_unavailable"]
"""Why a call failed before reaching a tool: the upstream is down or lost, it did not answer in
time, or the gateway could not put the call on record (fail closed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Unblock:
    """A machine-usable hint at what would unblock a refused call.

    Attributes:
        action: What to do.
        tool: The tool to call first (``call_first``).
        url: Where to connect (``connect``).
        approvers: Who may allow it (``ask_approver``), when the rule says.
    """

    action: UnblockAction
    tool: str | None = None
    url: str | None = None
    approvers: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The hint on the wire: ``action`` and the fields that are set."""
        wire: dict[str, Any] = {"action": self.action}
        if self.tool is not None:
            wire["tool"] = self.tool
        if self.url is not None:
            wire["url"] = self.url
        if self.approvers:
            wire["approvers"] = list(self.approvers)
        return wire


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """A refused call, as its caller is told.

    Attributes:
        kind: Why it was refused.
        message: The human sentence the model reads (first in ``content``).
        rule: The policy rule (or inspector, hook, limit rule) that refused, if one did.
        retry_after: Whole seconds until a retry may pass (rate limits), if known.
        unblock: What would unblock it (an `Unblock`, or its wire form as a mapping).
        approval: The approval (pending call) id the refusal concerns, if any.
        details: Further machine-readable facts (the limit, the finding kinds; camelCase keys,
            never a secret), carried as ``details``.
    """

    kind: RefusalKind
    message: str
    rule: str | None = None
    retry_after: int | None = None
    unblock: Unblock | Mapping[str, Any] | None = None
    approval: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``lockgate/refusal`` object (``kind``, ``message``, ``rule``, ``retryAfter`` and
        ``unblock`` always; ``approvalId`` and ``details`` when set)."""
        unblock = self.unblock.to_json() if isinstance(self.unblock, Unblock) else self.unblock
        wire: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "rule": self.rule,
            "retryAfter": self.retry_after,
            "unblock": dict(unblock) if unblock is not None else None,
        }
        if self.approval is not None:
            wire["approvalId"] = self.approval
        if self.details:
            wire["details"] = dict(self.details)
        return wire


def refusal_result(
    refusal: Refusal, *, tool: ToolDef | None = None, meta: Mapping[str, Any] | None = None
) -> ToolResult:
    """The tool error result the caller reads for ``refusal``.

    Args:
        refusal: The refusal.
        tool: The tool called: ``structuredContent`` is added when it is known and declares no
            ``outputSchema`` (None: only ``_meta`` carries the refusal).
        meta: Other ``_meta`` entries to keep (``lockgate/decision``, ``lockgate/pending``, ...).
    """
    payload = refusal.to_json()
    structured = None
    if tool is not None and tool.output_schema is None:
        structured = {REFUSAL_META: payload}
    return ToolResult(
        content=(TextContent(type="text", text=refusal.message),),
        structured_content=structured,
        is_error=True,
        meta={**(meta or {}), REFUSAL_META: payload},
    )


def refusal_of(result: ToolResult) -> Refusal | None:
    """The refusal a result carries in ``_meta`` (as any face delivered it), or None."""
    found = (result.meta or {}).get(REFUSAL_META)
    if (
        not result.is_error
        or not isinstance(found, Mapping)
        or found.get("kind") not in (REFUSAL_KINDS)
    ):
        return None
    retry = found.get("retryAfter")
    unblock = found.get("unblock")
    details = found.get("details")
    return Refusal(
        kind=found["kind"],
        message=str(found.get("message") or result.first_text()),
        rule=found.get("rule") if isinstance(found.get("rule"), str) else None,
        retry_after=retry if isinstance(retry, int) and not isinstance(retry, bool) else None,
        unblock=dict(unblock) if isinstance(unblock, Mapping) else None,
        approval=found.get("approvalId") if isinstance(found.get("approvalId"), str) else None,
        details=dict(details) if isinstance(details, Mapping) else {},
    )


def failure_result(
    message: str, kind: FailureKind, *, server: str | None = None, retryable: bool = True
) -> ToolResult:
    """The error result of a call that reached no tool because something failed (not a
    refusal): ``_meta["lockgate/error"]`` is ``{kind, server, retryable}``."""
    error: dict[str, Any] = {"kind": kind, "retryable": retryable}
    if server:
        error["server"] = server
    return ToolResult.error(message, meta={ERROR_META: error})


def failure_of(result: ToolResult) -> Mapping[str, Any] | None:
    """The ``lockgate/error`` object of a failed call's result, or None."""
    found = (result.meta or {}).get(ERROR_META)
    return found if result.is_error and isinstance(found, Mapping) else None
