"""`BusObserver`: ``tool.call`` and ``tool.result`` on the bus for each call that reaches a tool,
``tool.rate_limited`` for each call a rate limit refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.events.bus import EventBus
from gateway.events.tool_events import ALLOW, tool_call, tool_rate_limited, tool_result
from toolsets.context import CallContext
from toolsets.rates import RateLimit
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["BusObserver"]


class BusObserver:
    """Implements the chain's `toolsets.events.CallObserver` and
    `toolsets.rate_limited.LimitObserver`: publishing never blocks or fails.

    Both events carry ``ctx.call_id`` and the call's decision (its effect, rule and ``redact``
    paths). A call an upstream made a task of has its ``tool.result`` when the task ends
    (`gateway.tasks.results`), not here. Event data is built here; JSON encoding happens once,
    in the sinks.
    """

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus

    def started(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> None:
        self.bus.publish(tool_call(tool, ctx, args, ctx.decision or ALLOW))

    def finished(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        ctx: CallContext,
        result: ToolResult,
        duration_ms: float,
    ) -> None:
        if ctx.task is not None and ctx.task.created is not None:
            return  # an upstream task: its one tool.result goes out when it ends (gateway.tasks)
        decision = ctx.decision or ALLOW
        self.bus.publish(tool_result(tool, ctx, result, duration_ms, decision, args=args))

    def limited(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        ctx: CallContext,
        limit: RateLimit,
        result: ToolResult,
    ) -> None:
        # On the bus, not written through: a refusal changes nothing, so the audit sink's
        # group commit is enough (and a flood of refused calls costs no fsync each).
        decision = ctx.decision or ALLOW
        self.bus.publish(tool_rate_limited(tool, ctx, args, decision, limit=limit, result=result))
