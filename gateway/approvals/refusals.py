"""`Refusals`: a refused call is put on record (``tool.denied``), then answered with the message
the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gateway.approvals.recording import ApprovalRecorder
from gateway.events import tool_events as events
from toolsets.context import CallContext
from toolsets.decision import Decision
from toolsets.refusal import Refusal, Unblock, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["Refusals", "decision_meta", "policy_refusal"]


def decision_meta(decision: Decision) -> dict[str, Any]:
    """The decision as the refused caller sees it in ``_meta["lockgate/decision"]``."""
    return {
        "effect": decision.effect,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "policy_version": decision.policy_version,
    }


class Refusals:
    """Implements the chain's `toolsets.policy.Refuser` (audit first, then the bus)."""

    def __init__(self, record: ApprovalRecorder) -> None:
        self.record = record

    async def __call__(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, message: str | Refusal
    ) -> ToolResult:
        decision = ctx.decision
        assert decision is not None  # refusals come from the policy step and below
        refusal = message if isinstance(message, Refusal) else policy_refusal(decision, message)
        denied = events.tool_denied(tool, ctx, args, decision, refusal.message)
        await self.record(replace(denied, data={**denied.data, "refusal": refusal.kind}))
        meta = {"lockgate/decision": decision_meta(decision)}
        return refusal_result(refusal, tool=tool, meta=meta)


def policy_refusal(decision: Decision, message: str) -> Refusal:
    """The refusal of a call ``decision`` denies: by a rule (an approver may change the policy),
    or by a locked session gate (calling the tools that open it unblocks it)."""
    if not decision.gate_locked:
        unblock = Unblock(action="ask_approver")
        return Refusal(kind="denied", message=message, rule=decision.rule_id, unblock=unblock)
    if len(decision.unlock_by) == 1:
        unblock = Unblock(action="call_first", tool=decision.unlock_by[0])
    elif decision.unlock_by:
        unblock = Unblock(action="call_first")
    else:
        unblock = Unblock(action="none")
    details = {"unlockBy": list(decision.unlock_by)} if len(decision.unlock_by) > 1 else {}
    return Refusal(
        kind="session_locked",
        message=message,
        rule=decision.rule_id,
        unblock=unblock,
        details=details,
    )
