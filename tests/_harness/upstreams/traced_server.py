"""A test upstream MCP server instrumented with the OpenTelemetry SDK: its ``echo`` tool continues
the trace context the request carried and reports a span ``"upstream echo"`` over OTLP/HTTP.

The context is read from the request's ``params._meta`` (``traceparent``, ``tracestate``) and,
over HTTP, from the ``traceparent`` header when ``_meta`` has none. The span says where it found
it (``test.carrier``: ``meta``, ``header`` or ``none``) and what each carrier held
(``test.meta.traceparent``, ``test.header.traceparent``). The tool exports before it answers, so
the span is at the collector by the time the caller has the result.

Run as ``python tests/_harness/upstreams/traced_server.py --endpoint http://127.0.0.1:PORT
[--era dual|legacy|modern] [--name NAME] [--http PORT]``; stdio by default. ``--endpoint``
defaults to ``$OTEL_EXPORTER_OTLP_ENDPOINT``; spans go to ``ENDPOINT/v1/traces``. With
``--http 0`` the server listens first and then prints ``port N`` on stdout.
"""

from __future__ import annotations

# ruff: noqa: E402
from handoff import hand_off

hand_off()  # under pytest, a fork of its zygote runs this: the imports below are done there

import argparse
import os
import socket
import sys

import anyio
import uvicorn
from echo_server import era_guard
from mcp.server.mcpserver import Context, MCPServer
from opentelemetry.context import Context as TraceContext
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from serving import serve_stdio

SPAN_NAME = "upstream echo"
SERVICE_NAME = "traced-upstream"
PROPAGATOR = TraceContextTextMapPropagator()


def carriers(ctx: Context) -> tuple[dict[str, str], dict[str, str]]:
    """The W3C trace context fields of the request's ``_meta`` and of its HTTP headers."""
    meta = ctx.request_context.meta or {}
    from_meta = {k: str(meta[k]) for k in ("traceparent", "tracestate") if k in meta}
    headers = getattr(ctx.request_context.request, "headers", None) or {}
    from_headers = {k: headers[k] for k in ("traceparent", "tracestate") if k in headers}
    return from_meta, from_headers


def parent_context(from_meta: dict[str, str], from_headers: dict[str, str]) -> TraceContext:
    """The context to continue: ``_meta`` first, then the headers, else a new trace."""
    return PROPAGATOR.extract(from_meta or from_headers)


def build(provider: TracerProvider, name: str = "traced", era: str = "dual") -> MCPServer:
    """The server; ``provider`` exports its spans."""
    server = MCPServer(name, version="1.0", log_level="WARNING")
    tracer = provider.get_tracer("traced-upstream")

    @server.tool()
    async def echo(text: str, ctx: Context) -> str:
        """Echo the text back, inside a span that continues the caller's trace."""
        from_meta, from_headers = carriers(ctx)
        carrier = "meta" if from_meta else "header" if from_headers else "none"
        attributes = {
            "test.carrier": carrier,
            "test.meta.traceparent": from_meta.get("traceparent", ""),
            "test.header.traceparent": from_headers.get("traceparent", ""),
        }
        context = parent_context(from_meta, from_headers)
        with tracer.start_as_current_span(
            SPAN_NAME, context=context, kind=SpanKind.SERVER, attributes=attributes
        ):
            result = text
        await anyio.to_thread.run_sync(provider.force_flush)
        return result

    @server.tool()
    def carried(ctx: Context) -> dict[str, dict[str, str]]:
        """The trace context fields this request carried in ``_meta`` and in headers."""
        from_meta, from_headers = carriers(ctx)
        return {"meta": from_meta, "headers": from_headers}

    if era != "dual":
        server._lowlevel_server.middleware.insert(0, era_guard(era))
    return server


def provider_for(endpoint: str, name: str) -> TracerProvider:
    """A tracer provider exporting to ``endpoint`` (an OTLP/HTTP base URL)."""
    resource = Resource.create({"service.name": SERVICE_NAME, "test.server": name})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces", timeout=5)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


async def _serve_stdio(server: MCPServer, era: str) -> None:
    await serve_stdio(server._lowlevel_server, era)


def _serve_http(server: MCPServer, port: int) -> None:
    """Listen first, then say where on stdout (``port N``): readiness without polling."""
    sock = socket.create_server(("127.0.0.1", port))
    print(f"port {sock.getsockname()[1]}", flush=True)
    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", default=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
    parser.add_argument("--era", choices=["dual", "legacy", "modern"], default="dual")
    parser.add_argument("--name", default="traced")
    parser.add_argument("--http", type=int, default=None, help="serve streamable HTTP here")
    args = parser.parse_args()
    if not args.endpoint:
        parser.error("--endpoint or OTEL_EXPORTER_OTLP_ENDPOINT is required")
    provider = provider_for(args.endpoint, args.name)
    server = build(provider, args.name, args.era)
    try:
        if args.http is not None:
            _serve_http(server, args.http)
        else:
            anyio.run(_serve_stdio, server, args.era)
    finally:
        provider.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
