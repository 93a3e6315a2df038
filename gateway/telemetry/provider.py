"""`Telemetry`: the gateway's OpenTelemetry tracer provider, its OTLP exporter behind a bounded
batch queue, and the span makers the faces, the chain and the approvals use.

The provider is the gateway's own (not the process-global one), so several gateways in one
process, and an instrumented upstream beside them, each report as themselves. Export runs on
the batch processor's thread: a down or slow collector costs a call nothing; past
``max_queue_size`` waiting spans, new ones are dropped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio.to_thread
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from prometheus_client import CollectorRegistry

from gateway.approvals.writes import PendingListener
from gateway.config.telemetry import SamplingConfig, TelemetryConfig
from gateway.scripts.host import ToolCalls
from gateway.telemetry.export_warnings import QUIET, WarnOnce
from gateway.telemetry.faces import RequestSpanMiddleware
from gateway.telemetry.holds import HeldMarks, HoldSpans
from gateway.telemetry.lean import LeanTracer
from gateway.telemetry.metrics_export import MetricsExport
from gateway.telemetry.otlp import otlp_target
from gateway.telemetry.requests import RequestSpans
from gateway.telemetry.scripts import TracedSubCalls
from gateway.telemetry.steps import StepSpans

__all__ = ["Telemetry"]

_SCOPE = "lockgate"


def _sampler(sampling: SamplingConfig | None) -> Sampler | None:
    """The configured sampler; None lets the SDK read ``OTEL_TRACES_SAMPLER``."""
    if sampling is None:
        return None
    ratio = TraceIdRatioBased(sampling.ratio)
    root: Sampler = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}.get(
        sampling.sampler.removeprefix("parentbased_"), ratio
    )
    return ParentBased(root) if sampling.sampler.startswith("parentbased_") else root


def _exporter(config: TelemetryConfig) -> SpanExporter:
    """OTLP over http/protobuf or gRPC; keys the config leaves out come from ``OTEL_*``."""
    target = otlp_target(config, "traces")
    if target.grpc:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        return GrpcExporter(
            endpoint=target.endpoint, headers=target.headers, timeout=target.timeout
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=target.endpoint, headers=target.headers, timeout=target.timeout
    )


def _endpoint(config: TelemetryConfig, exporter: SpanExporter) -> str:
    """Where spans go, for the log: the OTLP exporter's URL, else the config's, else the
    ``OTEL_*`` one, else the default."""
    env = os.environ
    return (
        str(getattr(exporter, "_endpoint", "") or "")
        or config.endpoint
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or "the default OTLP endpoint (localhost)"
    )


def _resource(config: TelemetryConfig, version: str) -> Resource:
    attributes: dict[str, str] = {"service.version": version}
    if config.service_name is not None:
        attributes["service.name"] = config.service_name
    elif not os.environ.get("OTEL_SERVICE_NAME"):
        attributes["service.name"] = "lockgate"
    return Resource.create(attributes)


class Telemetry:
    """The gateway's tracing (built by `gateway.telemetry.build_telemetry`); entering does
    nothing, leaving flushes what is queued (bounded by the export timeout) and shuts down."""

    def __init__(
        self,
        config: TelemetryConfig,
        *,
        version: str,
        exporter: SpanExporter | None = None,
        scripts: frozenset[str] = frozenset(),
    ) -> None:
        self.provider = TracerProvider(
            sampler=_sampler(config.sampling), resource=_resource(config, version)
        )
        QUIET.install()  # a collector outage is warned about once, by `WarnOnce`
        exporter = exporter or _exporter(config)
        self.processor = BatchSpanProcessor(
            WarnOnce(exporter, _endpoint(config, exporter)),
            max_queue_size=config.max_queue_size,
            schedule_delay_millis=config.schedule_delay * 1000,
            max_export_batch_size=min(config.max_export_batch_size, config.max_queue_size),
            export_timeout_millis=config.export_timeout * 1000,
        )
        self.provider.add_span_processor(self.processor)
        tracer = self.provider.get_tracer(_SCOPE, version)
        lean = LeanTracer(self.provider, self.processor, InstrumentationScope(_SCOPE, version))
        self.requests = RequestSpans(lean)  # the hot path: lean spans (`lean`)
        self.steps = StepSpans(lean, scripts)
        self.held = HeldMarks()
        self._tracer = tracer
        self._config = config
        self._metrics: MetricsExport | None = None

    def export_metrics(self, registry: CollectorRegistry) -> None:
        """Export ``registry`` over OTLP too, when the config asks (``telemetry.metrics``)."""
        if self._config.metrics and self._metrics is None:
            self._metrics = MetricsExport(registry, self._config, self.provider.resource)

    def middleware(
        self, transport: str, session_of: Callable[[Any], str | None]
    ) -> RequestSpanMiddleware:
        """The downstream server's middleware opening a span per request (`faces`)."""
        return RequestSpanMiddleware(self.requests, transport, session_of)

    def sub_calls(self, calls: ToolCalls) -> ToolCalls:
        """``calls`` (where scripts' sub-calls enter the chain) with a span per sub-call."""
        return TracedSubCalls(calls, self._tracer)

    def hold_spans(self, then: PendingListener) -> PendingListener:
        """A pending-store listener writing hold spans, then telling ``then``."""
        return HoldSpans(self._tracer, then)

    async def flush(self) -> bool:
        """Export what is queued now (within the export timeout); False if it did not finish."""
        return await anyio.to_thread.run_sync(self.provider.force_flush)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._metrics is not None:
                await anyio.to_thread.run_sync(self._metrics.shutdown)
            await anyio.to_thread.run_sync(self.provider.shutdown)
        finally:
            QUIET.remove()
