"""A real OTLP/HTTP receiver on 127.0.0.1 for the telemetry tests.

``POST /v1/traces`` is decoded with the official ``opentelemetry-proto`` messages (gzip handled)
into plain dicts, so a test checks what the gateway exported against the standard, not against
the gateway's own code; ``/v1/metrics`` and ``/v1/logs`` are accepted and kept as bytes. Knobs
make it a faulty collector: ``delay`` seconds before answering, ``status`` to answer with.

    async with OTLPReceiver() as receiver:
        ...  # export to receiver.endpoint (OTEL_EXPORTER_OTLP_ENDPOINT)
        span = await receiver.wait_for_span(lambda s: s["name"] == "tools/call echo")
"""

from __future__ import annotations

import gzip
import socket
import zlib
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskGroup
from google.protobuf.message import DecodeError, Message  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

SpanDict = dict[str, Any]
"""A decoded span: name, trace_id, span_id, parent_span_id (lowercase hex, "" for a root), kind
("SERVER", "CLIENT", "INTERNAL", ...), attributes, events ([{name, attributes}]), links
([{trace_id, span_id, attributes}]), resource (attributes), scope (instrumentation scope name),
status ({code: "UNSET"|"OK"|"ERROR", message}), start and end (Unix nanoseconds)."""

_RESPONSES: dict[str, type[Message]] = {
    "/v1/traces": trace_service_pb2.ExportTraceServiceResponse,
    "/v1/metrics": metrics_service_pb2.ExportMetricsServiceResponse,
    "/v1/logs": logs_service_pb2.ExportLogsServiceResponse,
}


def value(any_value: AnyValue) -> Any:
    """The Python value of an OTLP ``AnyValue``."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "kvlist_value":
        return attributes(any_value.kvlist_value.values)
    return getattr(any_value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP key-value pairs as a dict."""
    found: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        found[pair.key] = value(pair.value)
    return found


def decode_span(span: Span, resource: dict[str, Any], scope: str) -> SpanDict:
    """One OTLP span as a `SpanDict`."""
    return {
        "name": span.name,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        "attributes": attributes(span.attributes),
        "events": [{"name": e.name, "attributes": attributes(e.attributes)} for e in span.events],
        "links": [
            {
                "trace_id": link.trace_id.hex(),
                "span_id": link.span_id.hex(),
                "attributes": attributes(link.attributes),
            }
            for link in span.links
        ],
        "resource": resource,
        "scope": scope,
        "status": {
            "code": Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_"),
            "message": span.status.message,
        },
        "start": span.start_time_unix_nano,
        "end": span.end_time_unix_nano,
    }


def decode_traces(body: bytes) -> list[SpanDict]:
    """Every span of an ``ExportTraceServiceRequest``."""
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans: list[SpanDict] = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(decode_span(span, resource, scope_spans.scope.name))
    return spans


def _inflate(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


class OTLPReceiver:
    """An OTLP/HTTP (protobuf) collector under uvicorn on 127.0.0.1, port chosen by the OS.

    Attributes:
        endpoint: The base URL (``http://127.0.0.1:PORT``); exporters append ``/v1/traces``.
        spans: Every span received, decoded (see `SpanDict`), in arrival order.
        bodies: The raw (decompressed) body of every request, for grepping values.
        paths: The path of every request, in arrival order.
        requests: How many export requests arrived (answered or not).
        delay: Seconds to wait before answering (a slow collector).
        status: The HTTP status to answer with (e.g. 503 for a failing collector).
    """

    def __init__(self) -> None:
        self.endpoint = ""
        self.spans: list[SpanDict] = []
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        self.requests = 0
        self.delay = 0.0
        self.status = 200
        self._arrived = anyio.Event()
        self._closing = anyio.Event()
        self._server: uvicorn.Server | None = None
        self._tasks: TaskGroup | None = None
        self._socket: socket.socket | None = None

    @property
    def app(self) -> Starlette:
        routes = [Route(path, self._receive, methods=["POST"]) for path in _RESPONSES]
        return Starlette(routes=routes)

    @property
    def payload(self) -> bytes:
        """Every body received, concatenated: ``value.encode() in receiver.payload``."""
        return b"\n".join(self.bodies)

    async def wait_for_span(
        self, predicate: Callable[[SpanDict], bool], timeout: float = 10
    ) -> SpanDict:
        """The first span received (or to arrive within ``timeout`` seconds) that matches."""
        with anyio.fail_after(timeout):
            while True:
                for span in self.spans:
                    if predicate(span):
                        return span
                self._arrived = anyio.Event()
                await self._arrived.wait()

    async def wait_for_requests(self, count: int, timeout: float = 10) -> None:
        """Wait until ``count`` export requests have arrived."""
        with anyio.fail_after(timeout):
            while self.requests < count:
                self._arrived = anyio.Event()
                await self._arrived.wait()

    async def _receive(self, request: Request) -> Response:
        self.requests += 1
        self._arrived.set()
        status, delay = self.status, self.delay  # as set when the request arrived
        raw = _inflate(await request.body(), request.headers.get("content-encoding", ""))
        if delay:
            with anyio.move_on_after(delay):  # the behaviour: a slow collector
                await self._closing.wait()
        if self._closing.is_set():
            return Response("shutting down", status_code=503)
        if status != 200:
            return Response(status_code=status)
        if "json" in request.headers.get("content-type", ""):
            return Response("only application/x-protobuf", status_code=415)
        path = request.url.path
        try:
            spans = decode_traces(raw) if path == "/v1/traces" else []
        except DecodeError:
            return Response("not an OTLP protobuf body", status_code=400)
        self.bodies.append(raw)
        self.paths.append(path)
        self.spans.extend(spans)
        self._arrived.set()
        body = _RESPONSES[path]().SerializeToString()
        return Response(body, media_type="application/x-protobuf")

    async def __aenter__(self) -> OTLPReceiver:
        self._socket = sock = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="off")
        self._server = server = uvicorn.Server(config)
        self._tasks = await anyio.create_task_group().__aenter__()
        self._tasks.start_soon(lambda: server.serve(sockets=[sock]))
        with anyio.fail_after(30):
            while not server.started:  # a flag: uvicorn offers nothing to wait on
                await anyio.sleep(0.01)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._server is not None
        assert self._tasks is not None
        self._closing.set()
        self._server.should_exit = True
        try:
            return await self._tasks.__aexit__(exc_type, exc, tb)
        finally:
            if self._socket is not None:
                self._socket.close()
