"""The calling user decides a held call over MCP: legacy ``elicitation/create`` and 2026-07-28
``InputRequiredResult`` with a sealed, principal-bound, expiring, single-use ``request_state``;
the MCP framing only (whether to ask and how an answer applies: `gateway.approvals.caller`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from gateway.approvals.caller import apply_caller_answer
from gateway.approvals.elicit import form_message, form_schema, parse_answer
from gateway.approvals.errors import InputRequired
from gateway.gateway import Gateway
from toolsets.context import CallContext, ElicitCallback

__all__ = ["INPUT_KEY", "answer_input", "elicit_callback", "input_required_result"]

INPUT_KEY = "lockgate_approval"


def elicit_callback(ctx: ServerRequestContext[Any]) -> ElicitCallback:
    """Asks the legacy client over its back-channel, tied to the call's request."""
    session, request_id = ctx.session, ctx.request_id

    async def elicit(
        message: str, schema: Mapping[str, Any]
    ) -> tuple[str, Mapping[str, Any] | None]:
        answer = await session.elicit_form(message, dict(schema), related_request_id=request_id)
        return answer.action, answer.content

    return elicit


def input_required_result(
    gateway: Gateway, held: InputRequired, ctx: CallContext
) -> types.InputRequiredResult:
    """Ask a modern client; the state names the pending call and only this principal can use it."""
    state = gateway.parts.sealer.seal(
        pending_id=held.call.id, principal=ctx.principal.id, expires_at=held.call.expires_at
    )
    form = types.ElicitRequestFormParams(
        message=form_message(held.call, held.tool), requested_schema=form_schema(held.call)
    )
    return types.InputRequiredResult(
        input_requests={INPUT_KEY: types.ElicitRequest(params=form)}, request_state=state
    )


async def answer_input(
    gateway: Gateway,
    request_state: str,
    input_responses: Mapping[str, Any] | None,
    ctx: CallContext,
) -> bool:
    """Apply a modern client's answer; False when it gave no decision (an approver decides).

    Raises:
        SealedStateError: the ``request_state`` is tampered with, replayed, expired or not this
            caller's.
    """
    payload = await gateway.parts.sealer.redeem(
        request_state, principal=ctx.principal.id, nonces=gateway.store
    )
    response = (input_responses or {}).get(INPUT_KEY)
    if not isinstance(response, types.ElicitResult):
        return False
    answer = parse_answer(response.action, response.content)
    if answer is None:
        return False
    decided = await apply_caller_answer(
        gateway.approvals, payload.pending_id, answer, by=ctx.principal, channel="input_required"
    )
    return decided is not None
