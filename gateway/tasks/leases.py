"""`TaskLeases`: which replica follows which unfinished task.

Every task a replica follows (an upstream task it polls, a held call it settles, a result
waiting for the pin review) carries that replica's lease in the store; the replica renews it
while it follows. A task whose lease lapsed (its replica stopped, or crashed) is an orphan: the
next replica to scan claims it with one compare-and-set (`TaskStore.claim`), so exactly one
replica resumes it. A replica that stops cleanly gives its leases up at once, and a gateway
starting on the same store (a restart) scans at once, so nothing waits for a task's ttl.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Final

import anyio

from gateway.tasks.record import TaskRecord
from gateway.tasks.store import TaskStore, claimable

__all__ = ["LEASE", "SCAN", "TaskLeases"]

log = logging.getLogger("lockgate.tasks")
LEASE: Final = 30.0
"""Seconds a replica's lease on a task holds without renewal."""
SCAN: Final = 5.0
"""Seconds between renewals and scans for orphaned tasks."""

Resume = Callable[[TaskRecord], None]


class TaskLeases:
    """This replica's leases (see the module docstring).

    Args:
        store: Where the tasks and their leases live.
        owner: This replica's id.
        lease: Seconds a lease holds.
        scan: Seconds between renewals and scans.
    """

    def __init__(
        self, store: TaskStore, owner: str, *, lease: float = LEASE, scan: float = SCAN
    ) -> None:
        self._store = store
        self.owner = owner
        self.lease = lease
        self.scan = scan

    def stamp(self, record: TaskRecord) -> TaskRecord:
        """``record`` leased to this replica (a task it creates)."""
        return replace(record, lease_owner=self.owner, lease_until=time.time() + self.lease)

    async def keep(self, followed: Callable[[], Collection[str]], resume: Resume) -> None:
        """Forever: renew the leases of ``followed`` tasks, claim orphans and ``resume`` them."""
        while True:
            try:
                await self.renew(followed())
                for record in await self.orphans(followed()):
                    resume(record)
            except Exception as exc:  # the store is away: the next round tries again
                log.warning("task leases not renewed: %r", exc)
            await anyio.sleep(self.scan)

    async def renew(self, ids: Collection[str]) -> None:
        """Extend this replica's leases of ``ids``."""
        now = time.time()
        for task_id in list(ids):
            await self._store.claim(task_id, self.owner, now + self.lease, now)

    async def orphans(self, followed: Collection[str]) -> list[TaskRecord]:
        """Unfinished tasks nobody follows, each now leased to this replica."""
        now, claimed = time.time(), []
        for record in await self._store.unfinished():
            if record.id in followed or record.expired(now):
                continue
            if not claimable(record, self.owner, now):
                continue
            taken = await self._store.claim(record.id, self.owner, now + self.lease, now)
            if taken is not None:
                log.info("task %s resumed on this replica", taken.id[:12])
                claimed.append(taken)
        return claimed

    async def release(self, ids: Collection[str]) -> None:
        """Give up the leases of ``ids`` (a stopping replica): others may claim them now."""
        now = time.time()
        for task_id in list(ids):
            try:
                await self._store.claim(task_id, self.owner, 0.0, now)
            except Exception as exc:  # the store is away: the lease lapses on its own
                log.warning("task %s: lease not given up: %r", task_id[:12], exc)
