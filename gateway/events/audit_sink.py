"""`AuditSink`: appends bus events to the audit log in the background, group-committed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from types import TracebackType
from typing import Final, Self

from gateway.events._tasks import ConsumerTasks
from gateway.events.audit import AuditLog
from gateway.events.bus import EventBus, Subscription

__all__ = ["AUDITED", "MAX_BATCH", "AuditSink"]

logger = logging.getLogger("gateway.events.audit")

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

    Decisions that must be on disk before they take effect (ask, deny, defer) are appended by
    the gateway itself with `AuditLog.append_event` before publishing; this sink then skips them.
    The sink writes without waiting for fsync (see `AuditLog.append_events`): plain call events
    survive a crash of the process and reach the disk with the next decision or checkpoint.

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

    async def _consume(self, subscription: Subscription) -> None:
        async for event in subscription:
            # Group commit: whatever queued up meanwhile goes in the same transaction.
            batch = [event, *subscription.ready(MAX_BATCH - 1)]
            try:
                await self._log.append_events(batch, durable=False)
            except Exception:
                logger.exception("audit entries for %d events not written", len(batch))
