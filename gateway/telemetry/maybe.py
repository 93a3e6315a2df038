"""`request_span`, `tool_call_span`: a request's server span for the faces that open their own
(the fast paths' listings, the in-process adapters' calls), or nothing when tracing is off: no
OpenTelemetry import, no span object."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING

from toolsets.context import CallContext

if TYPE_CHECKING:
    from gateway.telemetry.provider import Telemetry
    from gateway.telemetry.requests import CallSpan

__all__ = ["request_span", "tool_call_span"]


def request_span(
    telemetry: Telemetry | None,
    method: str,
    ctx: CallContext,
    *,
    trace: Mapping[str, str],
    request_id: str | int | None,
) -> AbstractContextManager[object]:
    """The server span of a ``method`` request made in ``ctx`` (current while inside), or a
    context that does nothing when ``telemetry`` is None."""
    if telemetry is None:
        return nullcontext()
    from gateway.telemetry.requests import SpanRequest

    request = SpanRequest(
        method=method,
        trace=trace,
        request_id=request_id,
        session_id=ctx.session_id,
        transport=ctx.client.transport,
        protocol_version=ctx.client.protocol_version,
    )
    return telemetry.requests.request(request)


def tool_call_span(
    telemetry: Telemetry | None, tool: str, ctx: CallContext
) -> AbstractContextManager[CallSpan | None]:
    """The server span of a call of ``tool`` made in process (``network.transport`` ``inproc``:
    the adapters' face), current while inside; yields None when ``telemetry`` is None."""
    if telemetry is None:
        return nullcontext()
    return telemetry.requests.tools_call(
        tool, trace={}, request_id=None, session_id=ctx.session_id, client=ctx.client
    )
