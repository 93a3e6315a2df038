"""`RequestSpanMiddleware`: the SDK path's server span of every MCP request but ``tools/call``.

Registered on the downstream `Server` (HTTP and stdio) only when tracing is on. ``tools/call``
is left to `gateway.mcp.calls.CallHandler`, whose span every face shares (and which adopts a
call the fast path handed over); notifications get no span.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.telemetry.requests import RequestSpans, SpanRequest
from toolsets import trace_context

__all__ = ["RequestSpanMiddleware"]

Ctx = ServerRequestContext[Any, Any]
NAMED: Final = frozenset({"prompts/get"})
"""Methods whose ``params.name`` is the span's target (``tools/call`` is the call handler's)."""


def _meta(params: Mapping[str, Any] | None) -> Mapping[str, object] | None:
    meta = params.get("_meta") if params else None
    return meta if isinstance(meta, Mapping) else None


class RequestSpanMiddleware:
    """Server middleware (`mcp.server.context.ServerMiddleware`) opening each request's span.

    Args:
        requests: The span maker.
        transport: ``http`` or ``stdio``.
        session_of: The session a request belongs to (as the call handler is told it).
    """

    def __init__(
        self, requests: RequestSpans, transport: str, session_of: Callable[[Ctx], str | None]
    ) -> None:
        self.requests = requests
        self.transport = transport
        self.session_of = session_of

    async def __call__(self, ctx: Ctx, call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None or ctx.method == "tools/call":
            return await call_next(ctx)
        with self.requests.request(self.describe(ctx)):
            return await call_next(ctx)

    def describe(self, ctx: Ctx) -> SpanRequest:
        """What the span says of the request ``ctx`` (names and ids, no argument values)."""
        params = ctx.params
        name = params.get("name") if params else None
        uri = params.get("uri") if params else None
        headers = getattr(ctx.request, "headers", None)
        return SpanRequest(
            method=ctx.method,
            target=name if ctx.method in NAMED and isinstance(name, str) else None,
            resource=uri if isinstance(uri, str) else None,
            trace=trace_context.incoming(_meta(params), headers),
            request_id=ctx.request_id,
            session_id=self.session_of(ctx),
            transport=self.transport,
            protocol_version=ctx.protocol_version,
        )
