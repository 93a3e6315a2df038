"""The calling user decides a held call, whatever the face: whether the caller is asked (the rule
names ``caller`` and its client declared elicitation), asking it through the call's elicitation
callback, and applying its answer as a decision. How the question travels over MCP (legacy
``elicitation/create``, a 2026-07-28 ``InputRequiredResult``) is `gateway.mcp.caller_decision`."""

from __future__ import annotations

import logging

import anyio

from gateway.approvals.elicit import CallerAnswer, ask_caller
from gateway.approvals.errors import (
    DecisionRefused,
    InputRequired,
    PendingConflict,
    PendingNotFound,
)
from gateway.approvals.pending import PendingCall
from gateway.approvals.service import ApprovalService
from toolsets.context import CallContext, Principal
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef

__all__ = ["apply_caller_answer", "ask_calling_user", "needs_back_channel"]

log = logging.getLogger("lockgate.approvals")


def needs_back_channel(decision: Decision, ctx: CallContext) -> bool:
    """Whether this call would ask a handshake-era caller, but ``ctx`` has no way to."""
    client = ctx.client
    return (
        decision.effect == "ask"
        and "caller" in decision.approval.approvers
        and client.era == "legacy"
        and client.elicitation
        and ctx.elicit is None
    )


async def apply_caller_answer(
    service: ApprovalService, id: str, answer: CallerAnswer, *, by: Principal, channel: str
) -> PendingCall | None:
    """Apply the caller's answer to pending call ``id``; None when it did not stand (an
    approver decides instead). The one place a caller's decision is applied."""
    decided: PendingCall | None = None
    try:
        # Shielded: once the user answered, the decision is taken even if the hold ends.
        with anyio.CancelScope(shield=True):
            decided = await service.decide(
                id,
                answer.decision,
                by=by,
                channel=channel,
                message=answer.message,
                args=answer.args,
                as_caller=True,
            )
    except (DecisionRefused, PendingConflict, PendingNotFound) as exc:
        log.info("caller's decision on %s not applied: %s", id, exc)
    return decided


async def ask_calling_user(
    service: ApprovalService, call: PendingCall, tool: ToolDef, ctx: CallContext
) -> PendingCall:
    """Ask the caller over its back-channel (handshake era) and apply the answer.

    Raises:
        InputRequired: a 2026-07-28 client that can answer: the face asks it.
    """
    if ctx.elicit is not None:
        answer = await ask_caller(ctx.elicit, call, tool)
        if answer is None:
            return call
        decided = await apply_caller_answer(
            service, call.id, answer, by=ctx.principal, channel="elicitation"
        )
        return decided or call
    if ctx.client.era == "modern" and ctx.client.elicitation:
        raise InputRequired(call, tool)
    return call
