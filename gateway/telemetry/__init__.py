"""OpenTelemetry traces of the gateway's calls (the ``otel`` extra; see docs/telemetry.md).

Only `build_telemetry` and the span openers of `gateway.telemetry.maybe` are imported without
the extra; the span makers load with it, and only when tracing is on.
"""

from gateway.telemetry.build import build_telemetry, tracing_wanted
from gateway.telemetry.maybe import request_span, tool_call_span

__all__ = ["build_telemetry", "request_span", "tool_call_span", "tracing_wanted"]
