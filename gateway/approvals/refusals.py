"""`Refusals`: a refused call is put on record (``tool.denied``), then answered with the message
the model reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.approvals.recording import ApprovalRecorder
from gateway.events import tool_events as events
from toolsets.context import CallContext
from toolsets.decision import Decision
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["Refusals", "decision_meta"]


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
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, message: str
    ) -> ToolResult:
        decision = ctx.decision
        assert decision is not None  # refusals come from the policy step and below
        await self.record(events.tool_denied(tool, ctx, args, decision, message))
        return ToolResult.error(message, meta={"lockgate/decision": decision_meta(decision)})
