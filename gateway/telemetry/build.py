"""`build_telemetry`: the gateway's tracing from its config and the ``OTEL_*`` environment, or
None when tracing is off (then nothing of OpenTelemetry is imported or inserted)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from gateway.config.model import GatewayConfig
from gateway.config.telemetry import OTEL_EXTRA_HINT, TelemetryConfig, otel_installed
from toolsets.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from gateway.telemetry.provider import Telemetry

__all__ = ["build_telemetry", "tracing_wanted"]

log = logging.getLogger("gateway.telemetry")

_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def tracing_wanted(config: GatewayConfig) -> TelemetryConfig | None:
    """The tracing settings when tracing is on: the ``telemetry`` section, else the standard
    environment (an OTLP endpoint set); None when off (``enabled: false``,
    ``OTEL_SDK_DISABLED=true``, or neither)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    settings = config.telemetry
    if settings is None and any(os.environ.get(name) for name in _ENDPOINT_VARS):
        settings = TelemetryConfig()
    if settings is None or not settings.enabled:
        return None
    return settings


def build_telemetry(config: GatewayConfig, *, version: str = "0.1.0") -> Telemetry | None:
    """The gateway's tracing, or None when off.

    Raises:
        ConfigError: tracing is on but the ``otel`` extra is not installed.
    """
    settings = tracing_wanted(config)
    if settings is None:
        return None
    if not otel_installed():
        message = f"tracing is on but the OpenTelemetry SDK is missing: {OTEL_EXTRA_HINT}"
        raise ConfigError([ConfigIssue("", None, None, "telemetry", message)])
    from gateway.telemetry.provider import Telemetry

    log.info("tracing on: OTLP %s", settings.protocol or "per OTEL_EXPORTER_OTLP_PROTOCOL")
    scripts = frozenset(s.name for s in config.enabled_servers() if s.transport == "script")
    return Telemetry(settings, version=version, scripts=scripts)
