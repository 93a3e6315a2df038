"""A local OTLP/HTTP collector for the tracing benchmark: accepts ``POST /v1/traces``, counts the
spans in each ``ExportTraceServiceRequest`` and answers ``GET /count`` with that number.

Run as ``python bench/otlp_sink.py --port PORT`` (a process of its own, like a real collector:
its CPU is not the client's or the gateway's).
"""

from __future__ import annotations

import argparse
import gzip

import uvicorn
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route


def build() -> Starlette:
    """The sink's app; its span count lives in the closure."""
    received = [0]
    ok = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()

    async def traces(request: Request) -> Response:
        body = await request.body()
        if request.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        export = trace_service_pb2.ExportTraceServiceRequest()
        export.ParseFromString(body)
        received[0] += sum(
            len(scope.spans) for spans in export.resource_spans for scope in spans.scope_spans
        )
        return Response(ok, media_type="application/x-protobuf")

    async def count(request: Request) -> Response:
        return PlainTextResponse(str(received[0]))

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/count", count)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(build(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
