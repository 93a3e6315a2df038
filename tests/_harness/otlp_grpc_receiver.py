"""A real OTLP/gRPC receiver on 127.0.0.1 for the telemetry tests: the collector's trace service
(``opentelemetry-proto``'s generated servicer) on a grpcio server, decoding what arrives and
waiting on it as `otlp_receiver.OTLPReceiver` does (whose ``spans``, ``requests`` and
``wait_for_span`` it shares). `stop` takes it down while the test goes on (an outage).

    async with OTLPGrpcReceiver() as receiver:
        ...  # export to receiver.endpoint with protocol grpc
        span = await receiver.wait_for_span(lambda s: s["name"] == "tools/call echo")
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import grpc  # type: ignore[import-untyped]
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from otlp_receiver import OTLPReceiver, decode_traces


class OTLPGrpcReceiver(OTLPReceiver, trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC collector of traces on a port chosen by the OS; ``endpoint`` is
    ``http://127.0.0.1:PORT`` (plain-text gRPC)."""

    def __init__(self) -> None:
        super().__init__()
        self._grpc: Any = None

    async def Export(  # the generated servicer's method name
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.requests += 1
        self.spans.extend(decode_traces(request.SerializeToString()))
        self._arrived.set()
        return trace_service_pb2.ExportTraceServiceResponse()

    async def stop(self) -> None:
        """Take the receiver down now (its port then refuses connections)."""
        if self._grpc is not None:
            server, self._grpc = self._grpc, None
            await server.stop(grace=None)

    async def __aenter__(self) -> OTLPGrpcReceiver:
        self._grpc = grpc.aio.server()
        add_servicer: Any = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_servicer(self, self._grpc)
        port = self._grpc.add_insecure_port("127.0.0.1:0")
        await self._grpc.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
