"""`EventsToolset`: reports each call that reaches the tools before it runs and after it returns."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

import anyio

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["CallObserver", "EventsToolset"]


class CallObserver(Protocol):
    """Receives the two ends of every call (the gateway publishes ``tool.call`` and
    ``tool.result``). Neither may block or fail the call."""

    def started(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> None: ...

    def finished(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        ctx: CallContext,
        result: ToolResult,
        duration_ms: float,
    ) -> None: ...


class EventsToolset(WrapperToolset):
    """Tells ``observer`` about every call that reaches the wrapped toolset.

    A call that raises or is cancelled is still reported as an error result, so every start has
    its end (reporting is synchronous, so it happens even in a cancelled scope).
    """

    def __init__(self, wrapped: Toolset, observer: CallObserver) -> None:
        super().__init__(wrapped)
        self.observer = observer

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        self.observer.started(tool, args, ctx)
        started = time.perf_counter()
        try:
            result = await self.wrapped.call_tool(name, args, ctx, tool)
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                failed = ToolResult.error("The call was cancelled before it finished.")
            else:
                failed = ToolResult.error(f"{type(exc).__name__}: {exc}")
            elapsed = (time.perf_counter() - started) * 1000
            self.observer.finished(tool, args, ctx, failed, elapsed)
            raise
        elapsed = (time.perf_counter() - started) * 1000
        self.observer.finished(tool, args, ctx, result, elapsed)
        return result
