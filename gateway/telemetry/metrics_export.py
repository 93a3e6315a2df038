"""`MetricsExport`: the gateway's Prometheus metrics also exported over OTLP, with the same names.

``/metrics`` stays the source: at each export (every ``metrics_interval`` seconds) the registry
is read once and each sample series becomes an OpenTelemetry observable with the name Prometheus
exposes (``lockgate_tool_calls_total``, ``lockgate_approval_decision_seconds_bucket`` with its
``le``...) and the sample's labels as attributes. Counters, histogram buckets, counts and sums
are monotonic counters; gauges are gauges. The series are those registered when export starts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry

from gateway.config.telemetry import TelemetryConfig
from gateway.telemetry.otlp import otlp_target

__all__ = ["MetricsExport"]

_MONOTONIC_SUFFIXES = ("_total", "_bucket", "_count", "_sum")
_SERIES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "summary": ("", "_count", "_sum"),
}
"""The series a Prometheus family of each type exposes (others: its own name)."""
_FRESH_FOR = 0.5
"""Seconds one read of the registry serves every observable of one export."""


def _exporter(config: TelemetryConfig) -> MetricExporter:
    target = otlp_target(config, "metrics")
    if target.grpc:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcExporter,
        )

        return GrpcExporter(
            endpoint=target.endpoint, headers=target.headers, timeout=target.timeout
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(
        endpoint=target.endpoint, headers=target.headers, timeout=target.timeout
    )


class _Samples:
    """The registry's samples by series name, read at most once per `_FRESH_FOR` seconds."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._read_at = float("-inf")
        self._by_name: dict[str, list[tuple[float, dict[str, str]]]] = {}

    def names(self) -> list[tuple[str, bool]]:
        """Every series name of the registry's families (those with no sample yet too), with
        whether it is monotonic; ``_created`` series are left out."""
        names: dict[str, bool] = {}
        for family in self.registry.collect():
            for suffix in _SERIES.get(family.type, ("",)):
                name = family.name + suffix
                names[name] = suffix in _MONOTONIC_SUFFIXES
        for name in self._read(force=True):  # a collector's own series, as it names them
            if not name.endswith("_created"):
                names.setdefault(name, name.endswith(_MONOTONIC_SUFFIXES))
        return sorted(names.items())

    def of(self, name: str) -> list[tuple[float, dict[str, str]]]:
        return self._read().get(name, [])

    def _read(self, *, force: bool = False) -> dict[str, list[tuple[float, dict[str, str]]]]:
        now = time.monotonic()
        if force or now - self._read_at > _FRESH_FOR:
            by_name: dict[str, list[tuple[float, dict[str, str]]]] = {}
            for family in self.registry.collect():
                for sample in family.samples:
                    by_name.setdefault(sample.name, []).append((sample.value, dict(sample.labels)))
            self._by_name, self._read_at = by_name, now
        return self._by_name


class MetricsExport:
    """Exports ``registry`` over OTLP every ``config.metrics_interval`` seconds until shut down."""

    def __init__(
        self,
        registry: CollectorRegistry,
        config: TelemetryConfig,
        resource: Resource,
        *,
        exporter: MetricExporter | None = None,
    ) -> None:
        reader = PeriodicExportingMetricReader(
            exporter or _exporter(config),
            export_interval_millis=config.metrics_interval * 1000,
            export_timeout_millis=config.export_timeout * 1000,
        )
        self.provider = MeterProvider(resource=resource, metric_readers=[reader])
        meter = self.provider.get_meter("lockgate")
        samples = _Samples(registry)
        for name, monotonic in samples.names():
            make = meter.create_observable_counter if monotonic else meter.create_observable_gauge
            make(name, callbacks=[_observer(samples, name)])

    def shutdown(self) -> None:
        """Export what is left (within the export timeout) and stop."""
        self.provider.shutdown()


def _observer(samples: _Samples, name: str) -> Any:
    def observe(_options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, labels) for value, labels in samples.of(name)]

    return observe
