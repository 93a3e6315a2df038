"""`Writes`: every write of a pending call through a backend's records, told once it is durable:
to the tasks of this process waiting on the call, then to the store's listener."""

from __future__ import annotations

import logging
from typing import Protocol

from gateway.approvals._transitions import Plan, Step
from gateway.approvals.pending import PendingCall
from gateway.approvals.records import PendingRecords
from gateway.approvals.waiters import Waiters

__all__ = ["PendingListener", "Writes"]

logger = logging.getLogger("gateway.approvals.store")


class PendingListener(Protocol):
    """Told about every record a store wrote (create and each transition), after it is durable."""

    async def __call__(self, call: PendingCall) -> None: ...


class Writes:
    """Writes pending calls and tells of each.

    Args:
        records: The backend's records.
        listener: Awaited after every write; its errors are logged, never raised (the write stands).
    """

    def __init__(self, records: PendingRecords, *, listener: PendingListener | None) -> None:
        self.records = records
        self.waiters = Waiters()
        """This process's tasks waiting on a call; a backend that hears of other processes'
        writes wakes them too."""
        self._listener = listener

    async def insert(self, call: PendingCall) -> None:
        """Store a new record (see `PendingRecords.insert`) and tell of it."""
        await self.records.insert(call)
        await self._published(call)

    async def commit(self, id: str, plan: Plan) -> Step:
        """Apply ``plan`` and tell of the write; errors are returned in the step, not raised."""
        step = await self.records.update(id, plan)
        if step.changed:
            await self._published(step.call)
        return step

    async def apply(self, id: str, plan: Plan) -> PendingCall:
        """Apply ``plan`` and tell of the write; the record as stored after it.

        Raises:
            PendingConflict: the plan refused (after writing what it planned, if anything).
            PendingNotFound: no record has that id.
        """
        step = await self.commit(id, plan)
        if step.error is not None:
            raise step.error
        return step.call

    async def _published(self, call: PendingCall) -> None:
        self.waiters.wake(call.id)
        if self._listener is None:
            return
        try:
            await self._listener(call)
        except Exception:
            # The write is durable; a failing subscriber must not make it look undone.
            logger.exception("Pending-call listener failed for %r", call.id)
