"""`TaskStore`: where gateway tasks live (in memory, the SQLite file, or PostgreSQL), and the
in-memory one."""

from __future__ import annotations

import abc

from gateway.tasks.record import TaskRecord

__all__ = ["LIST_LIMIT", "MemoryTaskStore", "TaskStore"]

LIST_LIMIT = 500
"""The most tasks `TaskStore.owned` returns (newest first)."""


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

    async def close(self) -> None:
        """Nothing to release."""
