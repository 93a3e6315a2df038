"""`AuditSink`: appends bus events to the audit log in the background, group-committed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Self

import anyio

from gateway.events._tasks import ConsumerTasks
from gateway.events.audit import AuditLog
from gateway.events.bus import EventBus, Subscription
from gateway.events.model import Event

__all__ = ["AUDITED", "LINGER", "MAX_BATCH", "AuditSink"]

logger = logging.getLogger("gateway.events.audit")

LINGER: Final = 0.05
"""Seconds the sink waits after an event for others to join its transaction."""
MAX_BATCH: Final = 256
"""Most events the audit sink writes in one transaction."""
AUDITED: Final = (
    "tool.call",
    "tool.result",
    "tool.denied",
    "tool.approval.*",
    "tool.deferred",
    "lockgate.gap",
)
"""What `AuditSink` logs by default (a gap entry shows where events were lost)."""


class AuditSink:
    """Appends bus events to an audit log in the background, for the ``async with`` block.

    Events are group-committed: after an event the sink waits `LINGER` for others to join its
    transaction, and writes without waiting for fsync (see `AuditLog.append_events`); plain call
    events survive a crash of the process and reach the disk with the next durable write.

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
        log: AuditLog,
        *,
        patterns: Sequence[str] = AUDITED,
        buffer: int = 10_000,
    ) -> None:
        self._tasks = ConsumerTasks(bus)
        self._log, self._patterns, self._buffer = log, patterns, buffer
        self._subscription: Subscription | None = None
        self._held: list[Event] = []
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
        return await self._tasks.__aexit__(exc_type, exc, tb)

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
            try:
                await self._flush([], durable=False)
            except Exception:
                logger.exception("audit entries not written")

    async def _flush(self, extra: list[Event], *, durable: bool) -> None:
        async with self._writing:
            queued = self._subscription.ready(MAX_BATCH) if self._subscription else []
            held, self._held = [*self._held, *queued], []
            if not (held or extra):
                return
            try:
                await self._log.append_events([*held, *extra], durable=durable)
            except BaseException:
                self._held[:0] = held  # kept for the next attempt, in order
                raise
