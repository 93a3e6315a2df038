"""`EventBus`: in-process publish/subscribe with bounded per-subscriber buffers and a replay ring.

Publishing is synchronous and never blocks or raises: each subscriber has a bounded anyio memory
stream fed with ``send_nowait``. A full subscriber loses the event, and the next thing it reads at
that point of the stream is one ``lockgate.gap`` event counting what it missed.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from gateway.events.model import Event
from gateway.events.tool_events import gap

__all__ = ["BusStats", "EventBus", "Listener", "Subscription", "compile_patterns"]

logger = logging.getLogger(__name__)

Listener = Callable[[Event], None]
"""A synchronous observer called inline by `EventBus.publish` (metrics); must be quick."""


def compile_patterns(patterns: Sequence[str]) -> Callable[[str], bool]:
    """A predicate on event types for glob ``patterns`` (``tool.*``, ``tool.approval.*``, ``*``).

    ``*`` matches across dots, so ``tool.*`` covers ``tool.approval.requested`` too.
    """
    regex = re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")
    cache: dict[str, bool] = {}

    def matches(event_type: str) -> bool:
        hit = cache.get(event_type)
        if hit is None:
            hit = cache[event_type] = regex.match(event_type) is not None
        return hit

    return matches


class Subscription:
    """One subscriber's view of the bus: an async iterator of events, in publish order.

    Attributes:
        name: Label used in metrics (``sse``, ``webhook:example.com``, ``audit``).
        matches: Whether an event type is wanted by this subscription.
        missed: Events dropped since the last gap event was delivered.
        dropped: Events dropped over the subscription's life.
    """

    def __init__(self, name: str, matches: Callable[[str], bool], buffer: int) -> None:
        self.name = name
        self.matches = matches
        self.missed = 0
        self.dropped = 0
        self._send: MemoryObjectSendStream[Event]
        self._receive: MemoryObjectReceiveStream[Event]
        self._send, self._receive = anyio.create_memory_object_stream[Event](buffer)

    def offer(self, event: Event) -> bool:
        """Queue ``event`` without waiting; False (and counted) when the buffer is full."""
        try:
            if self.missed:
                self._send.send_nowait(gap(self.missed))
                self.missed = 0
            self._send.send_nowait(event)
        except anyio.WouldBlock:
            self.missed += 1
            self.dropped += 1
            return False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # Closed by `EventBus.close`: the subscriber is finishing, nothing to count.
            return True
        return True

    def ready(self, limit: int) -> list[Event]:
        """Up to ``limit`` events already buffered, without waiting."""
        events: list[Event] = []
        while len(events) < limit:
            try:
                events.append(self._receive.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        return events

    def close(self) -> None:
        """End the iteration once buffered events are read."""
        self._send.close()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return self._receive.receive_nowait()
        except anyio.WouldBlock:
            if self.missed:
                # Drained after an overflow and nothing new was published: tell the gap now.
                missed, self.missed = self.missed, 0
                return gap(missed)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    def _release(self) -> None:
        self._send.close()
        self._receive.close()


@dataclass(frozen=True, slots=True)
class BusStats:
    """Counters for metrics.

    Attributes:
        published: Events published, by type.
        dropped: Events dropped, by subscriber name (kept after subscribers leave).
        subscribers: Subscriptions currently open.
    """

    published: dict[str, int]
    dropped: dict[str, int]
    subscribers: int


class EventBus:
    """The in-process event bus of one gateway.

    Args:
        source: The gateway id stamped on events published without a ``source``.
        ring_size: How many recent events `replay_after` can replay.
        buffer: Default per-subscriber buffer (events).
    """

    def __init__(self, source: str, *, ring_size: int = 1024, buffer: int = 1024) -> None:
        self.source = source
        self.buffer = buffer
        self._subscriptions: tuple[Subscription, ...] = ()
        self._listeners: tuple[Listener, ...] = ()
        self._ring: deque[Event] = deque(maxlen=ring_size)
        self._published: dict[str, int] = {}
        self._dropped: dict[str, int] = {}
        self._closed = False
        self._changed: anyio.Event | None = None

    def publish(self, event: Event) -> Event:
        """Deliver ``event`` to every matching subscriber without waiting; never raises.

        Call it from the event loop's thread. Returns the event as delivered (with ``source``).
        """
        try:
            if not event.source:
                event = replace(event, source=self.source)
            self._published[event.type] = self._published.get(event.type, 0) + 1
            self._ring.append(event)
            for subscription in self._subscriptions:
                if subscription.matches(event.type) and not subscription.offer(event):
                    name = subscription.name
                    self._dropped[name] = self._dropped.get(name, 0) + 1
        except Exception:
            logger.exception("event %s (%s) could not be fully published", event.id, event.type)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                logger.exception("event listener %r failed on %s", listener, event.type)
        return event

    @asynccontextmanager
    async def subscribe(
        self,
        patterns: Sequence[str] = ("*",),
        *,
        buffer: int | None = None,
        name: str = "subscriber",
    ) -> AsyncIterator[Subscription]:
        """Subscribe to events whose type matches any of ``patterns`` (see `compile_patterns`).

        Events published after entry are buffered (``buffer`` events, then dropped and counted).
        Leaving the block unsubscribes and frees the buffer.
        """
        subscription = Subscription(name, compile_patterns(patterns), buffer or self.buffer)
        if self._closed:
            subscription.close()
        else:
            self._set_subscriptions((*self._subscriptions, subscription))
        try:
            yield subscription
        finally:
            self._set_subscriptions(tuple(s for s in self._subscriptions if s is not subscription))
            subscription._release()

    def _set_subscriptions(self, subscriptions: tuple[Subscription, ...]) -> None:
        self._subscriptions = subscriptions
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    async def wait_subscribers(self, count: int) -> None:
        """Wait until exactly ``count`` subscriptions are open (after `close`: for shutdown)."""
        while len(self._subscriptions) != count:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    def replay_after(self, last_id: str) -> list[Event] | None:
        """Events published after ``last_id``, oldest first; None when it is not in the ring.

        Called right after `subscribe` with no ``await`` in between, the replay and the live
        stream neither overlap nor leave a hole.
        """
        for back, event in enumerate(reversed(self._ring)):
            if event.id == last_id:
                return list(self._ring)[len(self._ring) - back :]
        return None

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` inline for every published event; returns a function removing it."""
        self._listeners = (*self._listeners, listener)

        def remove() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return remove

    def close(self) -> None:
        """End every subscription (SSE streams, sinks) after their buffered events; for shutdown.

        Subscriptions count as open until their holders leave them: `wait_subscribers` with 0
        then waits for every stream to finish.
        """
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()

    @property
    def subscriber_count(self) -> int:
        """Subscriptions currently open."""
        return len(self._subscriptions)

    def stats(self) -> BusStats:
        """A snapshot of the counters."""
        return BusStats(dict(self._published), dict(self._dropped), len(self._subscriptions))
