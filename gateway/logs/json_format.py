"""`JsonFormatter`: each log record as one JSON object on one line (``--log-format json``).

The schema (docs/telemetry.md, "JSON logs"):

``timestamp``
    UTC, RFC 3339 with microseconds: ``2026-11-27T15:20:01.123456Z``.
``level``
    ``DEBUG``, ``INFO``, ``WARNING``, ``ERROR`` or ``CRITICAL``.
``logger``
    The logger's name (``lockgate``, ``toolsets.upstream.connection``, ``uvicorn.error``).
``message``
    The formatted message, credential-looking substrings masked.
``trace_id``, ``span_id``
    Lowercase hex (32 and 16 digits) of the OpenTelemetry span current when the record was
    made; absent outside a span, or without the ``otel`` extra.
``exception``
    The formatted traceback, when the record carries one (masked like the message).
any other key
    A field passed as ``extra={...}``, redacted as events are (`gateway.events.redact.redact`:
    values under sensitive keys and credential-looking strings masked); values JSON cannot
    hold are written as ``str(value)``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Final

from gateway.events.redact import mask_credentials, redact

_otel_trace: ModuleType | None
try:
    from opentelemetry import trace as _otel_trace
except ImportError:  # the otel extra is optional: no ids then
    _otel_trace = None

__all__ = ["RESERVED", "JsonFormatter", "current_ids"]

_STANDARD: Final = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}
"""Attributes every `logging.LogRecord` has: anything else came from ``extra``."""
RESERVED: Final = (
    "timestamp",
    "level",
    "logger",
    "message",
    "trace_id",
    "span_id",
    "exception",
)
"""The schema's own keys, in the order they are written; an ``extra`` field of the same name is
written as ``extra.NAME``."""


def current_ids() -> dict[str, str]:
    """``trace_id`` and ``span_id`` of the current OpenTelemetry span, or nothing."""
    if _otel_trace is None:
        return {}
    context = _otel_trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON (see the module docstring for the schema)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC)
        line: dict[str, Any] = {
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": record.levelname,
            "logger": record.name,
            "message": mask_credentials(record.getMessage()),
            **current_ids(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = mask_credentials(record.exc_text)
        extra = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        for key, value in redact(_plain(extra)).items():
            line[f"extra.{key}" if key in RESERVED else key] = value
        return json.dumps(line, ensure_ascii=False, default=str)


def _plain(value: Any) -> Any:
    """``value`` with every leaf JSON can hold kept and every other one as ``str(value)``."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
