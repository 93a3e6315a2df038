"""`EventsToolset`: publishes ``tool.call`` before forwarding and ``tool.result`` after."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from gateway.events.bus import EventBus
from gateway.events.types import ALLOW, DecisionLike, tool_call, tool_result
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.wrapper import WrapperToolset

__all__ = ["DecisionLookup", "EventsToolset"]

DecisionLookup = Callable[[str, CallContext], DecisionLike | None]
"""Gives the policy decision already taken for call ``(name, ctx)`` (its effect, rule id and
``redact`` paths), or None for "allowed, nothing to redact". The approval wrapper outside this one
knows it, for example keyed by ``ctx.call_id``."""


class EventsToolset(WrapperToolset):
    """Publishes call events on ``bus`` around every call that reaches the wrapped toolset.

    Both events carry ``ctx.call_id``. Building the event data (redaction, the argument hash, the
    response in MCP wire form) happens on the call path; JSON encoding happens once, in the sinks.
    Calls to unknown tools are forwarded without events (the wrapped toolset raises).

    Args:
        wrapped: The toolset whose calls are published.
        bus: Where events go.
        decision_of: Looks up the decision for a call; see `DecisionLookup`.
    """

    def __init__(
        self, wrapped: Toolset, bus: EventBus, *, decision_of: DecisionLookup | None = None
    ) -> None:
        super().__init__(wrapped)
        self.bus = bus
        self.decision_of = decision_of

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        tool = (await self.wrapped.get_tools(ctx)).get(name)
        if tool is None:
            return await self.wrapped.call_tool(name, args, ctx)
        decision = (self.decision_of and self.decision_of(name, ctx)) or ALLOW
        self.bus.publish(tool_call(tool, ctx, args, decision))
        started = time.perf_counter()
        try:
            result = await self.wrapped.call_tool(name, args, ctx)
        except BaseException as exc:
            # Raised or cancelled, not returned: still published as an error result so the pair
            # is complete (publishing is synchronous, so it happens even in a cancelled scope).
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                failed = ToolResult.error("The call was cancelled before it finished.")
            else:
                failed = ToolResult.error(f"{type(exc).__name__}: {exc}")
            elapsed = (time.perf_counter() - started) * 1000
            self.bus.publish(tool_result(tool, ctx, failed, elapsed, decision, args=args))
            raise
        elapsed = (time.perf_counter() - started) * 1000
        self.bus.publish(tool_result(tool, ctx, result, elapsed, decision, args=args))
        return result
