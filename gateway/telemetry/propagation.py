"""W3C Trace Context with OpenTelemetry: the context a caller's carrier continues
(`toolsets.trace_context.incoming` reads it), a span's carrier, a link to a stored one."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, get_current_span, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["carrier_of", "link_to", "parent_context"]

_PROPAGATOR = TraceContextTextMapPropagator()


def parent_context(carrier: Mapping[str, str]) -> Context | None:
    """The context a carrier continues (None when it carries no valid trace)."""
    if not carrier:
        return None
    return _PROPAGATOR.extract(carrier)


def carrier_of(span: Span) -> dict[str, str]:
    """``span``'s trace context as ``traceparent`` (and ``tracestate``)."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=set_span_in_context(span))
    return carrier


def link_to(traceparent: str) -> Link | None:
    """A link to the span a ``traceparent`` names (None when it is not valid)."""
    context = _PROPAGATOR.extract({"traceparent": traceparent})
    span_context = get_current_span(context).get_span_context()
    return Link(span_context) if span_context.is_valid else None
