"""W3C Trace Context with OpenTelemetry: the context a caller's carrier continues
(`toolsets.trace_context.incoming` reads it), a span's carrier, a link to a stored one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["LazyCarrier", "carrier_of", "link_to", "parent_context"]

_PROPAGATOR = TraceContextTextMapPropagator()


def parent_context(carrier: Mapping[str, str]) -> Context | None:
    """The context a carrier continues (None when it carries no valid trace)."""
    if not carrier:
        return None
    return _PROPAGATOR.extract(carrier)


def carrier_of(span: Span) -> dict[str, str]:
    """``span``'s trace context as ``traceparent`` (and ``tracestate``), formatted directly
    (what the W3C propagator writes, without its context round trip)."""
    context = span.get_span_context()
    if not context.is_valid:
        return {}
    flags = int(context.trace_flags)
    carrier = {"traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"}
    if context.trace_state:
        carrier["tracestate"] = context.trace_state.to_header()
    return carrier


class LazyCarrier(Mapping[str, str]):
    """``span``'s carrier, formatted the first time something reads it (most steps' never is:
    only an upstream call or a held call's record does)."""

    __slots__ = ("_carrier", "_span")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._carrier: dict[str, str] | None = None

    def _made(self) -> dict[str, str]:
        if self._carrier is None:
            self._carrier = carrier_of(self._span)
        return self._carrier

    def __getitem__(self, key: str) -> str:
        return self._made()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._made())

    def __len__(self) -> int:
        return len(self._made())


def link_to(traceparent: str) -> Link | None:
    """A link to the span a ``traceparent`` names (None when it is not valid)."""
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    span_context = get_current_span(context).get_span_context()
    return Link(span_context) if span_context.is_valid else None
