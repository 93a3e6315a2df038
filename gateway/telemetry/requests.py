"""`RequestSpans`: the server span of one MCP request, on every face.

Named per the OpenTelemetry MCP conventions: ``"{mcp.method.name} {target}"`` where the request
names a tool or a prompt (``tools/call echo``, ``prompts/get review``), else the method alone
(``tools/list``, ``resources/read``: a resource URI is an attribute, never part of the name). It
continues the caller's trace when the request carried one. The steps of the chain below
annotate it (`gateway.telemetry.current`).

A ``tools/call`` the fast path hands over to the SDK path (`BackChannelRequired`: the call needs
the session's back-channel) keeps its one span: the span is parked under the request's session
and JSON-RPC id instead of ended, and the SDK path's `tools_call` of that request adopts it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Final

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ErrorData, InputRequiredResult
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, use_span
from opentelemetry.util.types import AttributeValue
from pydantic import ValidationError

from gateway.approvals.errors import BackChannelRequired
from gateway.telemetry import attributes as attr
from gateway.telemetry.current import in_call
from gateway.telemetry.lean import LeanTracer
from gateway.telemetry.propagation import parent_context
from toolsets.context import ClientInfo
from toolsets.result import ToolResult

__all__ = ["HANDED_OVER", "CallSpan", "RequestSpans", "SpanRequest", "request_attributes"]

TRANSPORTS: Final = {"http": "tcp", "stdio": "pipe", "inprocess": "inproc"}
"""``network.transport`` of each face."""
HANDED_OVER: Final = "handed_to_sdk_path"
"""The event on a ``tools/call`` span the fast path handed over to the SDK path."""
MAX_PARKED: Final = 256
"""Handed-over spans waiting for the SDK path; past it the oldest is ended as it is."""
Outcome = ToolResult | InputRequiredResult | ErrorData


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRequest:
    """What a server span says of its request (no argument values: names and ids only)."""

    method: str
    target: str | None = None
    """The tool or prompt the request names (in the span name)."""
    resource: str | None = None
    """The resource URI a ``resources/*`` request names (an attribute only)."""
    trace: Mapping[str, str]
    request_id: str | int | None
    session_id: str | None
    transport: str
    protocol_version: str | None


def request_attributes(request: SpanRequest) -> dict[str, AttributeValue]:
    """The MCP and GenAI attributes of ``request``'s server span."""
    attributes: dict[str, AttributeValue] = {
        attr.MCP_METHOD: request.method,
        attr.NETWORK_TRANSPORT: TRANSPORTS.get(request.transport, request.transport),
    }
    if request.method == "tools/call" and request.target is not None:
        attributes[attr.TOOL_NAME] = request.target
        attributes[attr.OPERATION] = "execute_tool"
    elif request.method == "prompts/get" and request.target is not None:
        attributes[attr.PROMPT_NAME] = request.target
    if request.resource is not None:
        attributes[attr.RESOURCE_URI] = request.resource
    if request.session_id is not None:
        attributes[attr.MCP_SESSION_ID] = request.session_id
    if request.protocol_version is not None:
        attributes[attr.MCP_PROTOCOL_VERSION] = request.protocol_version
    if request.request_id is not None:
        attributes[attr.JSONRPC_REQUEST_ID] = str(request.request_id)
    return attributes


class CallSpan:
    """The open server span of one request; `end_with` records a call's outcome."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def end_with(self, outcome: Outcome) -> None:
        """Mark an error outcome: a JSON-RPC error (its code) or a tool error result."""
        if isinstance(outcome, ErrorData):
            self.fail(str(outcome.code), outcome.message)
        elif isinstance(outcome, ToolResult) and outcome.is_error:
            self.fail("tool_error")
        elif isinstance(outcome, InputRequiredResult):
            self.span.set_attribute(attr.APPROVAL_STATE, "input_required")

    def fail(self, error_type: str, message: str | None = None) -> None:
        """Mark the request failed with ``error_type`` (a JSON-RPC code, or a kind)."""
        self.span.set_attribute(attr.ERROR_TYPE, error_type)
        self.span.set_status(Status(StatusCode.ERROR, message))


def _error_of(exc: BaseException) -> tuple[str, str | None]:
    """``error.type`` and the status message of a request that raised: a JSON-RPC error's code
    and message; invalid params as the SDK answers them (never the client's input); else the
    exception's type."""
    if isinstance(exc, MCPError):
        return str(exc.error.code), exc.error.message
    if isinstance(exc, ValidationError):
        return str(INVALID_PARAMS), "Invalid request parameters"
    return type(exc).__qualname__, None


def _key(request: SpanRequest) -> tuple[str, str] | None:
    """Where a handed-over ``tools/call`` span waits: its session and JSON-RPC id."""
    if request.session_id is None or request.request_id is None:
        return None
    return (request.session_id, str(request.request_id))


class RequestSpans:
    """Opens the server span of each MCP request."""

    def __init__(self, tracer: LeanTracer) -> None:
        self.tracer = tracer
        self._parked: OrderedDict[tuple[str, str], Span] = OrderedDict()

    @contextmanager
    def request(self, request: SpanRequest) -> Iterator[CallSpan]:
        """The server span of ``request``, current while inside; an exception leaving it marks
        it failed (with the exception's type)."""
        key = _key(request) if request.method == "tools/call" else None
        span = self._parked.pop(key, None) if key is not None else None
        if span is None:
            span = self._start(request)
        handed = False
        try:
            with (
                use_span(span, record_exception=False, set_status_on_exception=False),
                in_call(span),
            ):
                yield CallSpan(span)
        except BackChannelRequired:
            if key is not None:
                self._park(key, span)
                handed = True
            raise
        except BaseException as exc:
            CallSpan(span).fail(*_error_of(exc))
            raise
        finally:
            if not handed:
                span.end()

    def _start(self, request: SpanRequest) -> Span:
        name = request.method if request.target is None else f"{request.method} {request.target}"
        return self.tracer.start_span(
            name,
            context=parent_context(request.trace),
            kind=SpanKind.SERVER,
            attributes=request_attributes(request),
        )

    def _park(self, key: tuple[str, str], span: Span) -> None:
        span.add_event(HANDED_OVER)
        self._parked[key] = span
        while len(self._parked) > MAX_PARKED:
            _, oldest = self._parked.popitem(last=False)
            oldest.end()

    def tools_call(
        self,
        tool: str,
        *,
        trace: Mapping[str, str],
        request_id: str | int | None,
        session_id: str | None,
        client: ClientInfo,
    ) -> AbstractContextManager[CallSpan]:
        """The server span of a ``tools/call`` of ``tool`` (see `request`)."""
        return self.request(
            SpanRequest(
                method="tools/call",
                target=tool,
                trace=trace,
                request_id=request_id,
                session_id=session_id,
                transport=client.transport,
                protocol_version=client.protocol_version,
            )
        )
