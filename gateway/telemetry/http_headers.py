"""`trace_headers`: an HTTP upstream gets a call's trace context as W3C headers too.

The call's ``params._meta`` already carries the ``traceparent`` (and ``tracestate``) of
lockgate's upstream-call span (`toolsets.trace_context.with_trace`). The SDK's HTTP transports
send each message from a task of their own, where the call's context is not current, so this
request hook of the upstream's HTTP client copies those keys from the JSON-RPC body it sends
into headers: one carrier, two places, the same parent. Installed only when tracing is on
(`gateway.wiring.upstreams`); no OpenTelemetry import.
"""

from __future__ import annotations

from typing import Any, Final

import httpx2

from toolsets import jsonwire
from toolsets.trace_context import TRACE_KEYS

__all__ = ["trace_headers"]

_MARK: Final = b'"traceparent"'


def _carrier(body: bytes) -> dict[str, str]:
    """The trace context in a JSON-RPC message's ``params._meta`` (empty if none)."""
    if _MARK not in body:
        return {}
    try:
        message: Any = jsonwire.loads(body)
    except ValueError:
        return {}
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return {}
    return {k: v for k in TRACE_KEYS if isinstance(v := meta.get(k), str)}


async def trace_headers(request: httpx2.Request) -> None:
    """httpx request hook: ``traceparent``/``tracestate`` headers from the body's ``_meta``."""
    if request.method != "POST":
        return
    try:
        body = request.content
    except httpx2.RequestNotRead:  # a streamed body: not a JSON-RPC message of ours
        return
    for key, value in _carrier(body).items():
        request.headers[key] = value
