"""`Event`: one typed, immutable event, serialised as a CloudEvents 1.0 JSON envelope."""

from __future__ import annotations

import functools
import random
import threading
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Final, Literal

from toolsets import jsonwire, trace_context

__all__ = [
    "CONTROL_TYPES",
    "EVENT_TYPES",
    "GAP",
    "RESET",
    "Event",
    "EventType",
    "new_event_id",
]

EventType = Literal[
    "tool.call",
    "tool.result",
    "tool.denied",
    "tool.rate_limited",
    "tool.approval.requested",
    "tool.approval.resolved",
    "tool.deferred",
    "tools.changed",
    "tool.pin_changed",
    "tool.pin_accepted",
    "resource.read",
    "resource.denied",
    "prompt.get",
    "prompt.denied",
    "upstream.status",
    "task.created",
    "task.status",
    "task.completed",
    "session.labels_cleared",
    "credential.required",
    "credential.connected",
    "credential.refreshed",
    "credential.failed",
    "credential.revoked",
    "lockgate.gap",
    "lockgate.reset",
]
"""Every event type the gateway publishes; ``lockgate.*`` are stream control events."""

GAP: Final = "lockgate.gap"
"""Told to a subscriber that fell behind: ``data.missed`` events were dropped for it."""
RESET: Final = "lockgate.reset"
"""Told to an SSE client whose ``Last-Event-ID`` is older than the replay buffer."""
CONTROL_TYPES: Final = frozenset({GAP, RESET})
EVENT_TYPES: Final = frozenset(EventType.__args__)  # type: ignore[attr-defined]

_CROCKFORD: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS: Final = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
"""Two base32 digits per 10 bits: table lookups encode ~4x faster than `base64.b32encode`."""
_TAIL_BITS: Final = 80


class _Clock:
    """ULID ids (48-bit milliseconds + 80 bits), strictly increasing within the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ms = 0
        self._tail = 0
        self._prefix = ""
        self._time = ""

    def stamp(self) -> tuple[str, str]:
        """A fresh ``(id, time)``: the id and its RFC 3339 millisecond timestamp."""
        ms = _time.time_ns() // 1_000_000
        with self._lock:
            if ms <= self._ms:
                # Same millisecond (or the wall clock stepped back): count up from the last tail,
                # the ULID "monotonic" rule. Tails are drawn one bit short so counting never spills.
                self._tail += 1
            else:
                self._ms, self._tail = ms, random.getrandbits(_TAIL_BITS - 1)
                self._prefix = _b32(ms)[-10:]
                self._time = _rfc3339(ms)
            tail, prefix, stamp = self._tail, self._prefix, self._time
        return prefix + _b32(tail), stamp


def _b32(value: int) -> str:
    """The low 80 bits of ``value`` as 16 Crockford base32 digits (order-preserving)."""
    p = _PAIRS
    return (
        p[value >> 70 & 1023]
        + p[value >> 60 & 1023]
        + p[value >> 50 & 1023]
        + p[value >> 40 & 1023]
        + p[value >> 30 & 1023]
        + p[value >> 20 & 1023]
        + p[value >> 10 & 1023]
        + p[value & 1023]
    )


@functools.lru_cache(maxsize=4)
def _second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _rfc3339(ms: int) -> str:
    """Milliseconds since the epoch as RFC 3339 UTC with milliseconds (the second's text is
    formatted once per second)."""
    seconds, millis = divmod(ms, 1000)
    return f"{_second(seconds)}.{millis:03d}Z"


_clock = _Clock()


def new_event_id() -> str:
    """A fresh ULID: 26 Crockford base32 characters, unique and sortable by creation time."""
    return _clock.stamp()[0]


@dataclass(frozen=True, kw_only=True)
class Event:
    """One event. Values are never changed: sinks share the same instance.

    Attributes:
        type: The event type (see `EventType`).
        data: The payload, JSON-compatible and already redacted.
        id: Unique, sortable ULID; also the SSE id and the webhook id. Assigned when empty.
        source: The publishing gateway's id (a URI reference); stamped by the bus when empty.
        time: RFC 3339 UTC timestamp of creation (milliseconds). Assigned when empty.
        traceparent: The W3C trace context of the call it is about, when traced (the
            CloudEvents distributed-tracing extension); taken from the step running at creation.
    """

    type: str
    data: Mapping[str, Any]
    id: str = ""
    source: str = ""
    time: str = ""
    traceparent: str = ""

    def __post_init__(self) -> None:
        if not self.traceparent and (traced := trace_context.traceparent()) is not None:
            object.__setattr__(self, "traceparent", traced)
        if not self.id:
            event_id, stamp = _clock.stamp()
            object.__setattr__(self, "id", event_id)
            object.__setattr__(self, "time", self.time or stamp)
        elif not self.time:
            object.__setattr__(self, "time", _clock.stamp()[1])

    def to_cloudevent(self) -> dict[str, Any]:
        """The CloudEvents 1.0 structured-mode envelope (a fresh dict)."""
        envelope: dict[str, Any] = {
            "specversion": "1.0",
            "id": self.id,
            "type": self.type,
            "source": self.source,
            "time": self.time,
            "datacontenttype": "application/json",
            "data": self.data,
        }
        if self.traceparent:
            envelope["traceparent"] = self.traceparent
        return envelope

    @cached_property
    def json_bytes(self) -> bytes:
        """The envelope as compact UTF-8 JSON, encoded once and shared by every sink."""
        return jsonwire.dumps(self.to_cloudevent(), default=str)

    @classmethod
    def from_cloudevent(cls, envelope: Mapping[str, Any]) -> Event:
        """Rebuild an event from its envelope (as received over SSE or a webhook).

        Raises:
            ValueError: a required attribute is missing.
        """
        try:
            return cls(
                type=str(envelope["type"]),
                data=envelope.get("data") or {},
                id=str(envelope["id"]),
                source=str(envelope.get("source", "")),
                time=str(envelope.get("time", "")),
                traceparent=str(envelope.get("traceparent", "")),
            )
        except KeyError as exc:
            raise ValueError(f"not a CloudEvent: missing {exc.args[0]!r}") from None
