"""Where and how a signal (traces, metrics) goes over OTLP: the protocol, the headers and the
endpoint, each from the ``telemetry`` section, else the signal's ``OTEL_*`` variable, else the
general one."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from gateway.config.telemetry import TelemetryConfig

__all__ = ["OtlpTarget", "otlp_target"]

Signal = Literal["traces", "metrics"]


@dataclass(frozen=True, slots=True)
class OtlpTarget:
    """An exporter's arguments: ``grpc`` or not, its endpoint (None: the exporter's own
    default, from ``OTEL_*``), headers and timeout."""

    grpc: bool
    endpoint: str | None
    headers: dict[str, str] | None
    timeout: float


def otlp_target(config: TelemetryConfig, signal: Signal) -> OtlpTarget:
    """The target of ``signal`` (over http/protobuf, ``/v1/{signal}`` appended to the base URL)."""
    env = os.environ
    protocol = (
        config.protocol
        or env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
        or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    headers = {k: v.get_secret_value() for k, v in config.headers.items()} or None
    grpc = protocol == "grpc"
    endpoint = config.endpoint
    if endpoint and not grpc:
        endpoint = endpoint.rstrip("/") + f"/v1/{signal}"
    return OtlpTarget(grpc, endpoint, headers, config.export_timeout)
