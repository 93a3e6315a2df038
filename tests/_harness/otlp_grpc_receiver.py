"""A real OTLP/gRPC receiver on 127.0.0.1 for the telemetry tests: the collector's trace service
(``opentelemetry-proto``'s generated servicer) on a grpcio server, decoding what arrives as
`otlp_receiver.OTLPReceiver` does. `stop` takes it down while the test goes on (an outage).

    async with OTLPGrpcReceiver() as receiver:
        ...  # export to receiver.endpoint with protocol grpc
        span = await receiver.wait_for_span(lambda s: s["name"] == "tools/call echo")
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import grpc  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from otlp_receiver import SpanDict, decode_traces


class OTLPGrpcReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC collector of traces on a port chosen by the OS.

    Attributes:
        endpoint: ``http://127.0.0.1:PORT`` (plain text gRPC).
        spans: Every span received, decoded, in arrival order.
        requests: How many export requests arrived.
    """

    def __init__(self) -> None:
        self.endpoint = ""
        self.spans: list[SpanDict] = []
        self.requests = 0
        self._arrived = anyio.Event()
        self._server: Any = None

    async def Export(  # the generated servicer's method name
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.requests += 1
        self.spans.extend(decode_traces(request.SerializeToString()))
        self._arrived.set()
        return trace_service_pb2.ExportTraceServiceResponse()

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

    async def stop(self) -> None:
        """Take the receiver down now (its port then refuses connections)."""
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop(grace=None)

    async def __aenter__(self) -> OTLPGrpcReceiver:
        self._server = grpc.aio.server()
        add_servicer: Any = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_servicer(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        await self._server.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
