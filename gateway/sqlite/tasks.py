"""`SQLiteTaskStore`: gateway tasks in the gateway's SQLite file (table ``tasks``), so every
process on the same file answers for every task."""

from __future__ import annotations

import json
import os
import sqlite3

from gateway.sqlite.schema import SQLiteFile
from gateway.tasks.record import TaskRecord
from gateway.tasks.store import LIST_LIMIT, TaskStore
from toolsets.canonical import canonical_json

__all__ = ["SQLiteTaskStore"]


class SQLiteTaskStore(TaskStore):
    """Tasks in the gateway's SQLite file, one row per task (its record as JSON)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)

    async def get(self, task_id: str) -> TaskRecord | None:
        def get(conn: sqlite3.Connection) -> TaskRecord | None:
            row = conn.execute("SELECT record FROM tasks WHERE id = ?", (task_id,)).fetchone()
            return TaskRecord.from_row(json.loads(row[0])) if row is not None else None

        return await self._file.run(get)

    async def put(self, record: TaskRecord) -> None:
        text = canonical_json(record.to_row()).decode()

        def put(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO tasks (id, principal, tenant, status, created_at,"
                " updated_at, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    record.principal,
                    record.tenant,
                    record.status,
                    record.created_at,
                    record.updated_at,
                    text,
                ),
            )

        await self._file.run(put)

    async def owned(self, principal: str, tenant: str | None) -> list[TaskRecord]:
        def owned(conn: sqlite3.Connection) -> list[TaskRecord]:
            rows = conn.execute(
                "SELECT record FROM tasks WHERE principal = ? AND tenant IS ?"
                " ORDER BY created_at DESC LIMIT ?",
                (principal, tenant, LIST_LIMIT),
            )
            return [TaskRecord.from_row(json.loads(record)) for (record,) in rows]

        return await self._file.run(owned)

    async def unfinished(self) -> list[TaskRecord]:
        def unfinished(conn: sqlite3.Connection) -> list[TaskRecord]:
            rows = conn.execute(
                "SELECT record FROM tasks WHERE status IN ('working', 'input_required')"
                " ORDER BY created_at LIMIT ?",
                (LIST_LIMIT,),
            )
            return [TaskRecord.from_row(json.loads(record)) for (record,) in rows]

        return await self._file.run(unfinished)

    async def claim(self, task_id: str, owner: str, until: float, now: float) -> TaskRecord | None:
        def claim(conn: sqlite3.Connection) -> TaskRecord | None:
            rows = conn.execute(
                "UPDATE tasks SET record = json_set(record, '$.lease_owner', ?,"
                " '$.lease_until', ?) WHERE id = ? AND status IN ('working', 'input_required')"
                " AND (json_extract(record, '$.lease_owner') IS NULL"
                " OR json_extract(record, '$.lease_owner') = ?"
                " OR COALESCE(json_extract(record, '$.lease_until'), 0) < ?) RETURNING record",
                (owner, until, task_id, owner, now),
            ).fetchall()  # all rows: the statement ends (and its write lock goes) here
            return TaskRecord.from_row(json.loads(rows[0][0])) if rows else None

        return await self._file.run(claim)

    async def close(self) -> None:
        await self._file.close()
