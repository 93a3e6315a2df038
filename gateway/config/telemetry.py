"""``telemetry``: OpenTelemetry traces over OTLP (the ``otel`` extra). Off unless this section
is present or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set; every key left
out is read by the SDK from its standard ``OTEL_*`` environment variable."""

from __future__ import annotations

import importlib
import os
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator

from gateway.config._strict import Strict
from policies.yamlfile import Located
from toolsets.errors import ConfigIssue

__all__ = [
    "OTEL_EXTRA_HINT",
    "SamplingConfig",
    "TelemetryConfig",
    "otel_installed",
    "telemetry_issues",
]

OTEL_EXTRA_HINT = "pip install 'lockgate[otel]'"

Sampler = Literal[
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
    "always_on",
    "always_off",
    "traceidratio",
]


class SamplingConfig(Strict):
    """Which traces are kept (the names of ``OTEL_TRACES_SAMPLER``)."""

    sampler: Sampler = Field(
        "parentbased_always_on",
        description="A caller's sampled flag wins (parent-based); else this decides.",
    )
    ratio: Annotated[float, Field(ge=0, le=1)] = Field(
        1.0, description="The share of new traces kept by the *traceidratio samplers."
    )


class TelemetryConfig(Strict):
    """OpenTelemetry traces (see docs/telemetry.md); unset keys come from ``OTEL_*``."""

    enabled: bool = Field(True, description="False turns tracing off even if OTEL_* is set.")
    endpoint: str | None = Field(
        None,
        description=(
            "OTLP base URL (http/protobuf: '/v1/traces' is appended; grpc: host:port URL). "
            "Default: OTEL_EXPORTER_OTLP_ENDPOINT."
        ),
    )
    protocol: Literal["http/protobuf", "grpc"] | None = Field(
        None, description="Default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf."
    )
    headers: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Headers sent to the collector; a value 'env:NAME' is read from NAME.",
    )
    service_name: str | None = Field(
        None, description="Default: OTEL_SERVICE_NAME, else 'lockgate'."
    )
    sampling: SamplingConfig | None = Field(None, description="Default: OTEL_TRACES_SAMPLER.")
    max_queue_size: Annotated[int, Field(ge=1)] = Field(
        2048, description="Spans waiting for export; beyond, new spans are dropped."
    )
    max_export_batch_size: Annotated[int, Field(ge=1)] = 512
    schedule_delay: Annotated[float, Field(gt=0)] = Field(
        1.0, description="Seconds between exports of a batch."
    )
    export_timeout: Annotated[float, Field(gt=0)] = Field(
        5.0, description="Seconds an export may take before it is given up."
    )
    metrics: bool = Field(
        False,
        description=(
            "Also export the Prometheus metrics of /metrics over OTLP, with the same names "
            "(/metrics stays)."
        ),
    )
    metrics_interval: Annotated[float, Field(gt=0)] = Field(
        60.0, description="Seconds between exports of the metrics."
    )

    @field_validator("headers", mode="before")
    @classmethod
    def _headers_from_env(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[Any, Any] = {}
        for key, item in value.items():
            out[key] = item
            if isinstance(item, str) and item.startswith("env:"):
                name = item[4:]
                if not os.environ.get(name):
                    raise ValueError(f"environment variable {name!r} is not set (header {key!r})")
                out[key] = os.environ[name]
        return out


def otel_installed() -> bool:
    """Whether the ``otel`` extra (the OpenTelemetry SDK and OTLP exporters) is importable."""
    names = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http")
    try:
        for name in names:
            importlib.import_module(name)
    except ImportError:
        return False
    return True


def telemetry_issues(telemetry: TelemetryConfig | None, located: Located) -> list[ConfigIssue]:
    """The ``telemetry`` section needs the ``otel`` extra."""
    if telemetry is None or not telemetry.enabled or otel_installed():
        return []
    message = f"tracing needs the OpenTelemetry SDK: {OTEL_EXTRA_HINT}"
    return [located.issue(("telemetry",), message)]
