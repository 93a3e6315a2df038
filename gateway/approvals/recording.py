"""What the approval service puts on record: the event of a new held call, the state and fields
a human decision leads to, and a worker's value as a result."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from gateway.approvals.pending import PendingCall, State
from gateway.approvals.wire import result_to_wire
from gateway.events import types as events
from gateway.events.model import Event
from policies import Decision
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["outcome_of", "requested", "value_result"]


def requested(
    call: PendingCall, tool: ToolDef, ctx: CallContext, args: Mapping[str, Any], decision: Decision
) -> Event:
    """``tool.approval.requested`` for a held call, ``tool.deferred`` for an external one."""
    if call.kind == "external":
        return events.tool_deferred(tool, ctx, args, decision, pending_id=call.id)
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(call.expires_at))
    hold = ctx.hold_for(decision.approval.hold)
    return events.approval_requested(
        tool,
        ctx,
        args,
        decision,
        approval_id=call.id,
        reason=call.reason,
        expires_at=expires,
        hold_seconds=hold,
    )


def outcome_of(
    decision: str, message: str | None, edited: dict[str, Any] | None, *, typed: bool = False
) -> tuple[State, dict[str, Any]]:
    """The state a decision leads to, and what it records.

    A ``respond`` text cannot conform to a tool's output schema, which MCP requires of every
    successful result (clients check it): for a ``typed`` tool it is an ``isError`` result.
    """
    if decision == "approve":
        return "approved", {}
    if decision == "edit":
        return "approved", {"override_args": edited}
    if decision == "deny":
        return "denied", {"message": message or "The call was denied by an approver."}
    text = message or ""  # respond: the human's text is the result; the tool never runs
    result = ToolResult.error(text) if typed else ToolResult.text(text)
    return "done", {"message": text, "result": result_to_wire(result)}


def value_result(value: Any) -> ToolResult:
    if isinstance(value, str):
        return ToolResult.text(value)
    text = json.dumps(value)
    structured = value if isinstance(value, dict) else {"result": value}
    return ToolResult(content=ToolResult.text(text).content, structured_content=structured)
