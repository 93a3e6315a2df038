"""`CallHandler`: the one core of ``tools/call`` behind every MCP face.

The SDK handler (HTTP and stdio) and the HTTP fast path parse a request their own way, then hand
the call and who is calling to `CallHandler`, which builds the `CallContext`, applies a
2026-07-28 caller's answer, runs the call through the gateway and returns the outcome: a tool
result, a question for the caller, or a JSON-RPC error. The faces differ only in framing.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import mcp_types as types
from mcp_types import ErrorData

from gateway.approvals.errors import BackChannelRequired, InputRequired
from gateway.gateway import Gateway
from gateway.mcp.caller_decision import answer_input, input_required_result
from gateway.mcp.errors import mcp_error
from toolsets.context import CallContext, ClientInfo, ElicitCallback, Principal, ProgressCallback
from toolsets.result import ToolResult
from toolsets.upstream.peer import ClientPeer
from toolsets.upstream.tasks import TaskAsk

__all__ = [
    "HOLD_META",
    "SESSION_HEADER",
    "SESSION_META",
    "CallHandler",
    "CallOutcome",
    "ToolCallRequest",
    "max_hold_of",
    "session_of",
]

CallOutcome = ToolResult | types.InputRequiredResult | ErrorData
"""A result, a question for a 2026-07-28 caller, or a JSON-RPC error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRequest:
    """A parsed ``tools/call``: the tool, its arguments and (2026-07-28) the caller's answers."""

    name: str
    arguments: Mapping[str, Any]
    request_state: str | None = None
    input_responses: Mapping[str, Any] | None = None
    max_hold: float | None = None
    session: str | None = None
    request_id: str | int | None = None
    trace: Mapping[str, str] = field(default_factory=dict)
    """The caller's W3C trace context (``params._meta``, else HTTP headers); see
    `gateway.telemetry`."""


HOLD_META = "lockgate/hold"
"""A ``tools/call`` ``_meta`` key: the most seconds the caller waits for a held call's decision
before it is answered "pending" (a number, at least 0; anything else is ignored)."""


SESSION_META = "lockgate/session"
"""A request ``_meta`` key: the session a 2026-07-28 caller's requests belong to (policy session
state); a 2025-11-25 session's own id wins. `SESSION_HEADER` says the same over HTTP."""
SESSION_HEADER = "lockgate-session"


def session_of(meta: Mapping[str, Any] | None) -> str | None:
    """The caller's session key from a request's ``_meta`` (see `SESSION_META`)."""
    value = meta.get(SESSION_META) if meta else None
    return value if isinstance(value, str) and 0 < len(value) <= 200 else None


def max_hold_of(meta: Mapping[str, Any] | None) -> float | None:
    """The caller's cap on the hold, from a request's ``_meta`` (see `HOLD_META`)."""
    value = meta.get(HOLD_META) if meta else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return None
    return float(value)


class CallHandler:
    """Runs one ``tools/call`` for any face (see the module docstring)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(
        self,
        request: ToolCallRequest,
        *,
        principal: Principal,
        session_id: str | None,
        client: ClientInfo,
        progress: ProgressCallback | None = None,
        elicit: ElicitCallback | None = None,
        peer: ClientPeer | None = None,
        task: TaskAsk | None = None,
    ) -> CallOutcome:
        """The outcome of ``request``, made by ``principal`` in ``session_id``; ``peer`` is the
        client as the call's upstream may reach it (`gateway.mcp.relay`). A 2026-07-28 client that
        an upstream may ask runs its call parked (`gateway.mcp.relay.parking`).

        Raises:
            BackChannelRequired: the call would ask a 2025-11-25 caller and ``elicit`` is None;
                nothing happened yet, so a face with a back-channel can serve it instead.
        """
        ctx = CallContext(
            principal=principal,
            session_id=session_id if session_id is not None else request.session,
            client=client,
            progress=progress,
            elicit=elicit,
            max_hold=request.max_hold,
            peer=peer,
            task=task,
        )
        telemetry = self.gateway.parts.telemetry
        if telemetry is None:
            return await self._dispatch(request, ctx)
        with telemetry.requests.tools_call(
            request.name,
            trace=request.trace,
            request_id=request.request_id,
            session_id=ctx.session_id,
            client=client,
        ) as span:
            outcome = await self._dispatch(request, ctx)
            span.end_with(outcome)
        return outcome

    async def _dispatch(self, request: ToolCallRequest, ctx: CallContext) -> CallOutcome:
        """Run the call parked, resumed or plainly (see `__call__`)."""
        relay, peer = self.gateway.parts.relay, ctx.peer
        state = request.request_state
        if state is not None and relay.parking.owns(state):
            outcome = await relay.parking.resume(state, request.input_responses, request.name, ctx)
        elif relay.parking.wanted(ctx):
            run = functools.partial(self._run, request)
            outcome = await relay.parking.run(run, request.name, ctx)
        else:
            outcome = await self._run(request, ctx)
        if peer is not None and peer.log_level is not None:
            await relay.logs.delivered()  # the call's log messages go before its result
        return outcome

    async def _run(self, request: ToolCallRequest, ctx: CallContext) -> CallOutcome:
        """Run the call: apply a 2026-07-28 caller's answer to an approval, then the chain.

        Raises:
            BackChannelRequired: as `__call__`.
        """
        try:
            if request.request_state is not None and not await answer_input(
                self.gateway, request.request_state, request.input_responses, ctx
            ):
                # No decision from the caller: an approver decides, so do not ask again.
                ctx = replace(ctx, client=replace(ctx.client, elicitation=False))
            return await self.gateway.call_tool(request.name, request.arguments, ctx)
        except InputRequired as held:
            return input_required_result(self.gateway, held, ctx)
        except BackChannelRequired:
            raise
        except Exception as exc:
            return mcp_error(exc)
