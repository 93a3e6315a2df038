"""`TracedToolset`: one span per call around a step of the chain (only inserted when the gateway
traces; see `gateway.telemetry`). Knows nothing of OpenTelemetry: the tracer is a `StepTracer`."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.trace_context import carried
from toolsets.wrapper import WrapperToolset

__all__ = ["PassThrough", "StepSpan", "StepTracer", "TracedToolset"]


@runtime_checkable
class PassThrough(Protocol):
    """A step that does nothing for some calls (the approval gate for an allowed call): those
    get no span of it."""

    def passes_through(self, ctx: CallContext) -> bool:
        """Whether the step hands this call on untouched."""
        ...


class StepSpan(Protocol):
    """One open step span, as the wrapper sees it."""

    @property
    def carrier(self) -> Mapping[str, str]:
        """Its W3C trace context (``traceparent``, ``tracestate``), for what the step sends on."""
        ...

    def finish(self, result: ToolResult) -> None:
        """Record the step's outcome (an error result marks the span)."""
        ...


class StepTracer(Protocol):
    """Opens a span for one step of one call (the gateway's OpenTelemetry tracer implements it).

    The span is the current one while the context manager is open; an exception leaving it is
    recorded on the span.
    """

    def step(
        self, step: str, name: str, tool: ToolDef, ctx: CallContext
    ) -> AbstractContextManager[StepSpan]: ...


class TracedToolset(WrapperToolset):
    """A span named by ``step`` around each call through ``wrapped`` that the step does work
    for (a `PassThrough` step handing a call on untouched gets none); listings pass untraced."""

    def __init__(self, step: str, wrapped: Toolset, tracer: StepTracer) -> None:
        super().__init__(wrapped)
        self.step = step
        self.tracer = tracer
        self._passes = wrapped.passes_through if isinstance(wrapped, PassThrough) else None

    @property
    def label(self) -> str:
        return f"Traced[{self.step}]({self.wrapped.label})"

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        if self._passes is not None and self._passes(ctx):
            return await self.wrapped.call_tool(name, args, ctx, tool)
        with self.tracer.step(self.step, name, tool, ctx) as span, carried(span.carrier):
            result = await self.wrapped.call_tool(name, args, ctx, tool)
            span.finish(result)
            return result
