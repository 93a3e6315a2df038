"""`LeanTracer`: the spans of a call's hot path (its server span, the chain's steps) at a fraction
of the SDK span's cost, exported by the same batch processor as every other span.

The SDK's `opentelemetry.sdk.trace.Span` guards each span with a lock, bounds its attributes,
events and links in checked containers, runs the sampler for every child, and copies itself into
a `ReadableSpan` when it ends. A `LeanSpan` is its own `ReadableSpan`: plain containers, written
only by the event loop's thread before it ends and read by the export thread after, so no lock;
the attributes lockgate sets are its own strings and numbers, so no per-value check. A child of a
span of this process takes its parent's sampling decision and trace state, which is what every
built-in sampler decides for it (parent-based, ratio of the trace id, always on or off); a root
or a remote parent asks the provider's sampler, as the SDK does. What is exported is the same.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from time import time_ns
from typing import Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    get_current_span,
)
from opentelemetry.util.types import AnyValue, Attributes

__all__ = ["LeanSpan", "LeanTracer"]

_UNSET: Final = Status(StatusCode.UNSET)
_SAMPLED: Final = TraceFlags(TraceFlags.SAMPLED)
_NOT_SAMPLED: Final = TraceFlags(TraceFlags.DEFAULT)


class LeanSpan(Span, ReadableSpan):
    """A recording span (see the module) that hands itself to ``processor`` when it ends."""

    def __init__(
        self,
        name: str,
        *,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, AnyValue],
        links: Sequence[Link],
        tracer: LeanTracer,
    ) -> None:
        # ReadableSpan's fields, set directly (its __init__ would create a default resource).
        self._name = name
        self._span_context = context
        self._context = context
        self._parent = parent
        self._kind = kind
        self._own = attributes
        self._attributes = attributes
        self._events: Sequence[Event] = ()  # a list once something is added (most never)
        self._links: Sequence[Link] = links
        self._start_time = time_ns()
        self._end_time: int | None = None
        self._status = _UNSET
        self._resource = tracer.resource
        self._instrumentation_scope = tracer.scope
        self._instrumentation_info = None
        self._processor = tracer.processor

    def get_span_context(self) -> SpanContext:
        return self._span_context

    def is_recording(self) -> bool:
        return self._end_time is None

    def set_attribute(self, key: str, value: AnyValue) -> None:
        if self._end_time is None:
            self._own[key] = value

    def set_attributes(self, attributes: Mapping[str, AnyValue]) -> None:
        if self._end_time is None:
            self._own.update(attributes)

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        if self._end_time is None:
            self._events = [*self._events, Event(name, dict(attributes or {}), timestamp)]

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        if self._end_time is None and (context.is_valid or attributes or context.trace_state):
            self._links = [*self._links, Link(context, dict(attributes or {}))]

    def update_name(self, name: str) -> None:
        if self._end_time is None:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        """As the SDK span: an OK status is final, UNSET is ignored."""
        if self._end_time is not None or self._status.status_code is StatusCode.OK:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        if status.status_code is not StatusCode.UNSET:
            self._status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """The ``exception`` event, with the attributes the SDK span gives it."""
        kind = type(exception)
        module = kind.__module__
        recorded: dict[str, AnyValue] = {
            "exception.type": f"{module}.{kind.__qualname__}"
            if module and module != "builtins"
            else kind.__qualname__,
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        recorded.update(attributes or {})
        self.add_event("exception", recorded, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self._end_time is not None:
            return
        self._end_time = end_time if end_time is not None else time_ns()
        self._processor.on_end(self)


class LeanTracer:
    """Starts `LeanSpan`s with ``provider``'s sampler, ids and resource, ending into
    ``processor`` (the provider's batch processor)."""

    def __init__(
        self, provider: TracerProvider, processor: SpanProcessor, scope: InstrumentationScope
    ) -> None:
        self.sampler = provider.sampler
        self.ids = provider.id_generator
        self.resource = provider.resource
        self.scope = scope
        self.processor = processor

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, AnyValue] | None = None,
        links: Sequence[Link] = (),
    ) -> Span:
        """A span under ``context``'s span (else the current one), recording when sampled."""
        parent: SpanContext | None = get_current_span(context).get_span_context()
        if parent is None or not parent.is_valid:
            parent = None
        attributes = {} if attributes is None else attributes
        if parent is not None and not parent.is_remote:  # a child: its parent's decision
            trace_id, flags = parent.trace_id, parent.trace_flags
            trace_state: TraceState | None = parent.trace_state
        else:
            trace_id = parent.trace_id if parent is not None else self.ids.generate_trace_id()
            decided = self.sampler.should_sample(context, trace_id, name, kind, attributes, links)
            trace_state = decided.trace_state
            sampled = _SAMPLED if decided.decision is Decision.RECORD_AND_SAMPLE else _NOT_SAMPLED
            random = parent.trace_flags.random_trace_id if parent else self.ids.is_trace_id_random()
            flags = TraceFlags(sampled | TraceFlags.RANDOM_TRACE_ID) if random else sampled
            attributes = dict(decided.attributes or {})  # as the SDK: what the sampler kept
        span_context = SpanContext(trace_id, self.ids.generate_span_id(), False, flags, trace_state)
        if not flags.sampled:
            return NonRecordingSpan(span_context)
        return LeanSpan(
            name,
            context=span_context,
            parent=parent,
            kind=kind,
            attributes=attributes,
            links=links,
            tracer=self,
        )
