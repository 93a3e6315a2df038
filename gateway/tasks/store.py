"""`TaskStore`: where gateway tasks live (in memory, the SQLite file, or PostgreSQL), and the
in-memory one."""

from __future__ import annotations

import abc
from dataclasses import replace

from gateway.tasks.record import TaskRecord

__all__ = ["LIST_LIMIT", "MemoryTaskStore", "TaskStore", "claimable"]

LIST_LIMIT = 500
"""The most tasks `TaskStore.owned` (newest first) and `TaskStore.unfinished` return."""


def claimable(record: TaskRecord, owner: str, now: float) -> bool:
    """Whether ``owner`` may take (or renew) the lease of ``record`` at ``now``: it is
    unfinished and nobody else holds a live lease on it."""
    return not record.terminal and (record.lease_owner in (None, owner) or record.lease_until < now)


class TaskStore(abc.ABC):
    """Gateway task records by id."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The record of ``task_id``, or None."""

    @abc.abstractmethod
    async def put(self, record: TaskRecord) -> None:
        """Write ``record`` (insert or replace)."""

    @abc.abstractmethod
    async def owned(self, principal: str, tenant: str | None) -> list[TaskRecord]:
        """The tasks of ``principal`` (of ``tenant``), newest first, at most `LIST_LIMIT`."""

    @abc.abstractmethod
    async def unfinished(self) -> list[TaskRecord]:
        """Tasks not yet ended, oldest first, at most `LIST_LIMIT` (what replicas resume)."""

    @abc.abstractmethod
    async def claim(self, task_id: str, owner: str, until: float, now: float) -> TaskRecord | None:
        """Give ``owner`` the lease of ``task_id`` until ``until`` when `claimable` at ``now``
        (one compare-and-set: two replicas never both win); the record, or None."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release what the store holds."""


class MemoryTaskStore(TaskStore):
    """Tasks in this process only (``approvals.store: memory``)."""

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    async def put(self, record: TaskRecord) -> None:
        self._records[record.id] = record

    async def owned(self, principal: str, tenant: str | None) -> list[TaskRecord]:
        mine = [r for r in self._records.values() if r.owned_by(principal, tenant)]
        mine.sort(key=lambda r: r.created_at, reverse=True)
        return mine[:LIST_LIMIT]

    async def unfinished(self) -> list[TaskRecord]:
        live = [r for r in self._records.values() if not r.terminal]
        live.sort(key=lambda r: r.created_at)
        return live[:LIST_LIMIT]

    async def claim(self, task_id: str, owner: str, until: float, now: float) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is None or not claimable(record, owner, now):
            return None
        record = self._records[task_id] = replace(record, lease_owner=owner, lease_until=until)
        return record

    async def close(self) -> None:
        """Nothing to release."""
