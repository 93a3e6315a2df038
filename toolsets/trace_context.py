"""The trace context a call carries out of the gateway: W3C ``traceparent``/``tracestate`` of
the innermost step span, for upstream calls (``params._meta``) and held-call records.

Set by `toolsets.traced.TracedToolset` while a traced step runs; empty when tracing is off, so
readers pay one context-variable lookup and add nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

__all__ = [
    "TRACE_KEYS",
    "carried",
    "incoming",
    "of_message",
    "outgoing",
    "traceparent",
    "with_trace",
]

TRACE_KEYS: Final = ("traceparent", "tracestate")
"""The W3C Trace Context keys, as ``_meta`` keys and HTTP headers."""

_EMPTY: Final[Mapping[str, str]] = {}
_current: ContextVar[Mapping[str, str]] = ContextVar("lockgate_trace_carrier", default=_EMPTY)


def outgoing() -> Mapping[str, str]:
    """The carrier (``traceparent``, maybe ``tracestate``) of the step running now; empty when
    tracing is off."""
    return _current.get()


def traceparent() -> str | None:
    """The ``traceparent`` of the step running now, if any."""
    return _current.get().get("traceparent")


@contextmanager
def carried(carrier: Mapping[str, str]) -> Iterator[None]:
    """``carrier`` is the outgoing trace context while inside."""
    token = _current.set(carrier)
    try:
        yield
    finally:
        _current.reset(token)


def with_trace(meta: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """``meta`` with the outgoing trace context added (unchanged when there is none)."""
    carrier = _current.get()
    if not carrier:
        return meta
    return {**(meta or {}), **carrier}


def incoming(
    meta: Mapping[str, object] | None, headers: Mapping[str, str] | None = None
) -> Mapping[str, str]:
    """A caller's trace context: ``meta``'s (a request's ``params._meta``) when it has a
    ``traceparent``, else ``headers``' (lower-case names); empty when neither carries one."""
    for source in (meta, headers):
        if source and isinstance(source.get("traceparent"), str):
            return {k: v for k in TRACE_KEYS if isinstance(v := source.get(k), str)}
    return _EMPTY


def of_message(
    message: Mapping[str, object], headers: Mapping[str, str] | None = None
) -> Mapping[str, str]:
    """A caller's trace context from a raw JSON-RPC request (its ``params._meta``), else from
    ``headers`` (see `incoming`)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return incoming(meta if isinstance(meta, Mapping) else None, headers)
