"""The server span of the call running now (set by `gateway.telemetry.requests`), which the
steps below annotate with what they learn: the decision, the approval, the approver."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.trace import INVALID_SPAN, Span

__all__ = ["call_span", "in_call"]

_current: ContextVar[Span] = ContextVar("lockgate_call_span", default=INVALID_SPAN)


def call_span() -> Span:
    """The server span of the call running now (a no-op span outside one)."""
    return _current.get()


@contextmanager
def in_call(span: Span) -> Iterator[None]:
    """``span`` is the call's server span while inside."""
    token = _current.set(span)
    try:
        yield
    finally:
        _current.reset(token)
