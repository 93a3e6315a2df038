"""`RequestSpans`: the server span of one MCP request (``tools/call``), on every face.

Named ``"{mcp.method.name} {gen_ai.tool.name}"`` and attributed per the OpenTelemetry MCP and
GenAI conventions; it continues the caller's trace when the request carried one. The steps of
the chain below annotate it (`gateway.telemetry.current`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from mcp_types import ErrorData, InputRequiredResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from gateway.telemetry import attributes as attr
from gateway.telemetry.current import in_call
from gateway.telemetry.propagation import parent_context
from toolsets.context import ClientInfo
from toolsets.result import ToolResult

__all__ = ["CallSpan", "RequestSpans"]

_TRANSPORT = {"http": "tcp", "stdio": "pipe", "inprocess": "inproc"}
Outcome = ToolResult | InputRequiredResult | ErrorData


class CallSpan:
    """The open server span of one call; `end_with` records its outcome."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def end_with(self, outcome: Outcome) -> None:
        """Mark an error outcome: a JSON-RPC error (its code) or a tool error result."""
        if isinstance(outcome, ErrorData):
            self.span.set_attribute(attr.ERROR_TYPE, str(outcome.code))
            self.span.set_status(Status(StatusCode.ERROR, outcome.message))
        elif isinstance(outcome, ToolResult) and outcome.is_error:
            self.span.set_attribute(attr.ERROR_TYPE, "tool_error")
            self.span.set_status(Status(StatusCode.ERROR))
        elif isinstance(outcome, InputRequiredResult):
            self.span.set_attribute(attr.APPROVAL_STATE, "input_required")


class RequestSpans:
    """Opens the server span of each ``tools/call``."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    @contextmanager
    def tools_call(
        self,
        tool: str,
        *,
        trace: Mapping[str, str],
        request_id: str | int | None,
        session_id: str | None,
        client: ClientInfo,
    ) -> Iterator[CallSpan]:
        """The server span of a ``tools/call`` of ``tool``, current while inside."""
        attributes: dict[str, AttributeValue] = {
            attr.MCP_METHOD: "tools/call",
            attr.TOOL_NAME: tool,
            attr.OPERATION: "execute_tool",
            attr.NETWORK_TRANSPORT: _TRANSPORT[client.transport],
        }
        if session_id is not None:
            attributes[attr.MCP_SESSION_ID] = session_id
        if client.protocol_version is not None:
            attributes[attr.MCP_PROTOCOL_VERSION] = client.protocol_version
        if request_id is not None:
            attributes[attr.JSONRPC_REQUEST_ID] = str(request_id)
        with (
            self.tracer.start_as_current_span(
                f"tools/call {tool}",
                context=parent_context(trace),
                kind=SpanKind.SERVER,
                attributes=attributes,
            ) as span,
            in_call(span),
        ):
            yield CallSpan(span)
