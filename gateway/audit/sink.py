"""`AuditSink`: appends bus events to the audit log in the background, group-committed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Protocol, Self

import anyio

from gateway.audit.log import AuditEntry
from gateway.events import tool_events as event_types
from gateway.events._tasks import ConsumerTasks
from gateway.events.bus import EventBus, Subscription
from gateway.events.model import Event

__all__ = ["AUDITED", "LINGER", "MAX_BATCH", "AuditSink", "AuditWriter"]

logger = logging.getLogger("gateway.audit.log")

LINGER: Final = 0.05
"""Seconds the sink waits after an event for others to join its transaction."""
MAX_BATCH: Final = 256
"""Most events the audit sink writes in one transaction."""
AUDITED: Final = (
    "tool.call",
    "tool.result",
    "tool.denied",
    "tool.rate_limited",
    "tool.approval.*",
    "tool.deferred",
    "tool.pin_*",
    "resource.read",
    "resource.denied",
    "prompt.get",
    "prompt.denied",
    "task.*",
    "credential.*",
    "lockgate.gap",
    "session.labels_cleared",
)
"""What `AuditSink` logs by default (a gap entry shows where events were lost)."""
RETRY_FIRST: Final = 0.2
"""Seconds before the first retry of a failed write; doubles up to `RETRY_MAX`."""
RETRY_MAX: Final = 2.0
"""The longest pause between retries, in seconds (held entries are written soon after a return)."""
DRAIN_TIMEOUT: Final = 5.0
"""Seconds the sink keeps trying to write what it holds when the gateway stops."""


class AuditWriter(Protocol):
    """Where the audit sink appends: the embedded log (`gateway.audit.log.AuditLog`) or the
    chain replicas share (`gateway.postgres.audit.PostgresAuditLog`)."""

    @property
    def path(self) -> object:
        """Where the log is, for messages."""
        ...

    async def append_events(
        self, events: Sequence[Event], *, durable: bool = True
    ) -> list[AuditEntry]: ...

    async def __aenter__(self) -> object: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


class AuditSink:
    """Appends bus events to an audit log in the background, for the ``async with`` block.

    Events are group-committed: after an event the sink waits `LINGER` for others to join its
    transaction, and writes without waiting for fsync (see `AuditLog.append_events`); plain call
    events survive a crash of the process and reach the disk with the next durable write.

    A failed write is retried with backoff (new events join the retry) until the log takes it;
    nothing is dropped silently: beyond ``buffer`` held events the oldest are dropped, and a
    ``lockgate.gap`` entry with the count is written with the next batch that succeeds.

    Decisions that must be on disk before they take effect (ask, deny, defer, approvals) go
    through `write_through`: everything the sink holds is written first, then the decision, in
    one durable transaction, so the log keeps the order in which things happened. The sink skips
    the decision when the bus delivers it later.

    Args:
        bus: Where events come from.
        log: An open audit log.
        patterns: Event types to log.
        buffer: Events held while the disk is slower than the bus.
    """

    def __init__(
        self,
        bus: EventBus,
        log: AuditWriter,
        *,
        patterns: Sequence[str] = AUDITED,
        buffer: int = 10_000,
    ) -> None:
        self._tasks = ConsumerTasks(bus, drain_timeout=DRAIN_TIMEOUT)
        self._log, self._patterns, self._buffer = log, patterns, buffer
        self._subscription: Subscription | None = None
        self._held: list[Event] = []
        self._dropped = 0
        self._writing = anyio.Lock()

    async def __aenter__(self) -> Self:
        await self._tasks.__aenter__()
        await self._tasks.add(self._patterns, self._consume, name="audit", buffer=self._buffer)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        await self._tasks.__aexit__(exc_type, exc, tb)
        if self._held or self._dropped:
            logger.error(
                "audit log %s: %d entries could not be written before shutdown (%d dropped before)",
                self.path,
                len(self._held),
                self._dropped,
            )
        return None

    @property
    def path(self) -> str:
        """Where the audit log is written."""
        return str(self._log.path)

    async def write_through(self, event: Event) -> None:
        """Write what the sink holds and then ``event``, durably, before returning.

        Raises:
            Exception: whatever the audit log raised (the caller fails closed).
        """
        await self._flush([event], durable=True)

    async def _consume(self, subscription: Subscription) -> None:
        self._subscription = subscription
        async for event in subscription:
            self._held.append(event)
            await anyio.sleep(LINGER)
            await self._write_held()

    async def _write_held(self) -> None:
        """Write what the sink holds, retrying with backoff until the log takes it (the failure
        is logged once, and again when the log takes the entries)."""
        delay, failures = RETRY_FIRST, 0
        while True:
            try:
                await self._flush([], durable=False)
            except Exception as exc:
                failures += 1
                if failures == 1:
                    logger.error(
                        "audit log %s not written (%r); %d entries held, retrying",
                        self.path,
                        exc,
                        len(self._held),
                    )
                await anyio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX)
            else:
                if failures:
                    logger.warning(
                        "audit log %s written again after %d failed tries", self.path, failures
                    )
                return

    async def _flush(self, extra: list[Event], *, durable: bool) -> None:
        async with self._writing:
            queued = self._subscription.ready(MAX_BATCH) if self._subscription else []
            held, self._held = [*self._held, *queued], []
            if not (held or extra):
                return
            gap = [event_types.gap(self._dropped)] if self._dropped else []
            try:
                await self._log.append_events([*gap, *held, *extra], durable=durable)
            except BaseException:
                self._held[:0] = held  # kept for the next attempt, in order
                self._bound()
                raise
            self._dropped = 0

    def _bound(self) -> None:
        """Keep at most ``buffer`` held events; count the oldest dropped for a gap entry."""
        excess = len(self._held) - self._buffer
        if excess > 0:
            del self._held[:excess]
            self._dropped += excess
            logger.error("audit log %s: %d entries dropped (disk full?)", self.path, excess)
