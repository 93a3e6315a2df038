"""Script runs in traces: a span per sub-call a script or hook makes (``tools.NAME(...)``).

A script tool's run is its call's upstream step (`gateway.telemetry.steps`, named
``lockgate.script {tool}``); the sub-calls it makes re-enter the chain at its top
(`gateway.scripts.host.ToolCalls`), where `TracedSubCalls` opens ``lockgate.sub_call {tool}``
under the run's span. The sub-call's own chain steps nest below it, and its decision and
approval are written on it (it is the call's span while inside), not on the script's call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from gateway.scripts.host import ToolCalls
from gateway.telemetry import attributes as attr
from gateway.telemetry.current import in_call
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["SUB_CALL_SPAN", "TracedSubCalls"]

SUB_CALL_SPAN: Final = "lockgate.sub_call"


class TracedSubCalls:
    """Implements `gateway.scripts.host.ToolCalls` over ``calls`` with a span per sub-call."""

    def __init__(self, calls: ToolCalls, tracer: Tracer) -> None:
        self.calls = calls
        self.tracer = tracer

    async def tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return await self.calls.tools(ctx)

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        attributes: dict[str, AttributeValue] = {
            attr.TOOL_NAME: name,
            attr.OPERATION: "execute_tool",
        }
        if ctx.parent_call_id is not None:
            attributes[attr.PARENT_CALL] = ctx.parent_call_id
        with (
            self.tracer.start_as_current_span(
                f"{SUB_CALL_SPAN} {name}", kind=SpanKind.INTERNAL, attributes=attributes
            ) as span,
            in_call(span),
        ):
            result = await self.calls.call_tool(name, args, ctx)
            if result.is_error:
                span.set_attribute(attr.ERROR_TYPE, "tool_error")
                span.set_status(Status(StatusCode.ERROR))
            return result
