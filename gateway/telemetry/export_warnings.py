"""`WarnOnce`: one warning when exporting spans starts failing, one line when it works again,
instead of the OTLP exporters' error per failed batch and per retry (a collector down for an
hour would otherwise log one every ``schedule_delay``).

The exporter loggers' warnings and errors are demoted to debug records (`QUIET`, a filter on
`EXPORTER_LOGGERS` while a gateway of the process traces); the last one's first line on the
exporting thread becomes the reason in lockgate's warning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["EXPORTER_LOGGERS", "QUIET", "WarnOnce", "shown_endpoint"]

log = logging.getLogger("gateway.telemetry")

EXPORTER_LOGGERS: Final = (
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.sdk._shared_internal",
)
"""Where the OTLP exporters and the batch processor log each failed batch, retry and dropped
span: quietened, `WarnOnce` speaks for them."""
_MAX_REASON: Final = 200


def shown_endpoint(url: str) -> str:
    """``url`` as a log may show it: without a user or password."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit(parts._replace(netloc=netloc))


class _Quiet(logging.Filter):
    """Demotes warnings and errors to debug; keeps the last one's first line per thread."""

    def __init__(self) -> None:
        super().__init__()
        self._last = threading.local()
        self._lock = threading.Lock()
        self._users = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self._last.reason = record.getMessage().splitlines()[0][:_MAX_REASON]
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True

    def take(self) -> str | None:
        """The last demoted message on this thread (then forgotten)."""
        reason: str | None = getattr(self._last, "reason", None)
        self._last.reason = None
        return reason

    def install(self) -> None:
        """On the exporter loggers while any gateway of this process traces (counted)."""
        with self._lock:
            self._users += 1
            for name in EXPORTER_LOGGERS:
                logging.getLogger(name).addFilter(self)

    def remove(self) -> None:
        """Off the exporter loggers once the last gateway that installed it is gone."""
        with self._lock:
            self._users -= 1
            if self._users <= 0:
                for name in EXPORTER_LOGGERS:
                    logging.getLogger(name).removeFilter(self)


QUIET: Final = _Quiet()
"""The process's one filter (several gateways may trace in one process)."""


class WarnOnce(SpanExporter):
    """Exports through ``wrapped``; says once that exporting to ``endpoint`` fails (naming it and
    the fix) and once that it works again. An export that raises counts as a failure."""

    def __init__(self, wrapped: SpanExporter, endpoint: str) -> None:
        self.wrapped = wrapped
        self.endpoint = shown_endpoint(endpoint)
        self.failing = False
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.wrapped.export(spans)
        except Exception as exc:  # the batch thread must go on: counted as a failed export
            result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        else:
            reason = QUIET.take() or "refused, unreachable or too slow"
        with self._lock:
            changed = (result is SpanExportResult.FAILURE) != self.failing
            self.failing ^= changed
        if changed and self.failing:
            log.warning(
                "cannot export traces to %s (%s): spans are dropped until it answers; calls "
                "are not affected. Check that the collector runs there, or set "
                "telemetry.endpoint (OTEL_EXPORTER_OTLP_ENDPOINT)",
                self.endpoint,
                reason[:_MAX_REASON],
            )
        elif changed:
            log.info("exporting traces to %s again", self.endpoint)
        return result

    def shutdown(self) -> None:
        self.wrapped.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.wrapped.force_flush(timeout_millis)
