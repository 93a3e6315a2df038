"""A stand-in OpenTelemetry collector for trying lockgate's traces without one: it receives
OTLP/HTTP (``POST /v1/traces``, protobuf, as lockgate exports it), keeps the spans in memory and
prints a trace as an indented tree.

    .venv/bin/python examples/otlp_print.py --port 4318 &
    curl -s http://127.0.0.1:4318/traces           # every trace received, oldest first
    curl -s http://127.0.0.1:4318/traces/TRACE_ID  # one trace (the id in lockgate's JSON logs)

Needs the ``otel`` extra (``pip install 'lockgate[otel]'``). Not for production: nothing is
stored, nothing is sampled, nothing is bounded but the process's memory.
"""

from __future__ import annotations

import argparse
import gzip
from collections import defaultdict
from typing import Any

import uvicorn
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

SHOWN = ("lockgate.", "gen_ai.tool.name", "mcp.", "error.type")
"""Attribute prefixes printed beside a span."""


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _line(span: Span, depth: int) -> str:
    took = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
    kind = Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_").lower()
    shown = [f"{a.key}={_value(a.value)}" for a in span.attributes if a.key.startswith(SHOWN)]
    line = f"{'  ' * depth}{span.name} [{kind}] {took:.1f} ms  {' '.join(shown)}".rstrip()
    events = [
        f"{'  ' * (depth + 2)}event {e.name}: "
        + " ".join(f"{a.key}={_value(a.value)}" for a in e.attributes)
        for e in span.events
    ]
    links = [f"{'  ' * (depth + 2)}link to trace {link.trace_id.hex()}" for link in span.links]
    return "\n".join([line, *events, *links])


class Traces:
    """The spans received, by trace id (in the order traces were first seen)."""

    def __init__(self) -> None:
        self.spans: dict[str, list[Span]] = defaultdict(list)

    def add(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.spans[span.trace_id.hex()].append(span)

    def tree(self, trace_id: str) -> str:
        """The trace as an indented tree, roots (spans whose parent is not here) first."""
        spans = sorted(self.spans.get(trace_id, []), key=lambda s: s.start_time_unix_nano)
        ids = {s.span_id for s in spans}
        children: dict[bytes, list[Span]] = defaultdict(list)
        for span in spans:
            children[span.parent_span_id if span.parent_span_id in ids else b""].append(span)
        lines = [f"trace {trace_id}"]

        def walk(parent: bytes, depth: int) -> None:
            for span in children[parent]:
                lines.append(_line(span, depth))
                walk(span.span_id, depth + 1)

        walk(b"", 1)
        return "\n".join(lines) + "\n"


def build() -> Starlette:
    traces = Traces()
    ok = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

    async def receive(request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        traces.add(body)
        return Response(ok, media_type="application/x-protobuf")

    async def every(request: Request) -> Response:
        return PlainTextResponse("".join(traces.tree(trace_id) for trace_id in traces.spans))

    async def one(request: Request) -> Response:
        trace_id = request.path_params["trace_id"]
        if trace_id not in traces.spans:
            return PlainTextResponse("no such trace (yet)\n", status_code=404)
        return PlainTextResponse(traces.tree(trace_id))

    routes = [
        Route("/v1/traces", receive, methods=["POST"]),
        Route("/traces", every),
        Route("/traces/{trace_id}", one),
    ]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=4318)
    args = parser.parse_args()
    uvicorn.run(build(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
