"""What the approval service puts on record: the event of a new held call, the state and fields
a human decision leads to, and a worker's value as a result; and `ApprovalRecorder`, what puts
them there."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, Protocol

from gateway.approvals.pending import Kind, PendingCall, State
from gateway.approvals.wire import result_to_wire
from gateway.events import tool_events as events
from gateway.events.model import Event
from policies import Decision
from toolsets import trace_context
from toolsets.context import CallContext, ClientInfo, Principal
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = [
    "ApprovalRecorder",
    "held_call",
    "origin_of",
    "outcome_of",
    "requested",
    "value_result",
]


class ApprovalRecorder(Protocol):
    """Puts an approval event on record (audit log, durably) and then publishes it (the
    gateway's `gateway.events.recorder.Recorder.record`).

    Raises when the record cannot be written: the caller fails closed.
    """

    async def __call__(self, event: Event) -> None: ...


def held_call(
    tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
) -> PendingCall:
    """A new pending call for this call, bound to the caller, the tool and the decision."""
    kind: Kind = "external" if decision.effect == "defer" else "approval"
    options = decision.approval
    return PendingCall.new(
        args=args,
        ttl=options.expires,
        approvers=options.approvers,
        decisions=tuple(sorted(options.decisions)),
        kind=kind,
        call_id=ctx.call_id,
        principal=ctx.principal.id,
        session_id=ctx.session_id,
        tool=tool.name,
        server=tool.server,
        upstream_tool=tool.upstream_name,
        tool_pin=tool.pin,
        policy_version=decision.policy_version,
        rule_id=decision.rule_id,
        reason=decision.reason,
        principal_roles=tuple(sorted(ctx.principal.roles)),
        tenant=ctx.principal.tenant,
        grants=options.grants,
        grant_max=None if options.grants == ("once",) else options.grant_max,
        stages=options.stages,
        break_glass=options.break_glass,
        traceparent=trace_context.traceparent(),
        client=client_facts(ctx.client),
    )


def client_facts(client: ClientInfo) -> dict[str, Any]:
    """What a pending call keeps of its caller's client (`PendingCall.client`)."""
    return {
        "name": client.name,
        "version": client.version,
        "era": client.era,
        "protocol_version": client.protocol_version,
        "transport": client.transport,
    }


def origin_of(call: PendingCall) -> CallContext:
    """The context of the call ``call`` holds (its events are about that call)."""
    return CallContext(
        principal=Principal(id=call.principal, tenant=call.tenant),
        session_id=call.session_id,
        call_id=call.call_id,
    )


def requested(
    call: PendingCall,
    tool: ToolDef,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: Decision,
    *,
    context: Mapping[str, Any] | None = None,
) -> Event:
    """``tool.approval.requested`` for a held call, ``tool.deferred`` for an external one;
    ``context``: the held call's context pack as a notice carries it."""
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
        context=context,
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
