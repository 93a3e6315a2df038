"""`PostgresTaskStore`: gateway tasks in the shared schema (table ``tasks``), so any replica
answers ``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/list`` for any task."""

from __future__ import annotations

import json

from gateway.postgres.database import Conn, Database
from gateway.tasks.record import TaskRecord
from gateway.tasks.store import LIST_LIMIT, TaskStore
from toolsets.canonical import canonical_json

__all__ = ["PostgresTaskStore"]


class PostgresTaskStore(TaskStore):
    """Tasks in PostgreSQL.

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def get(self, task_id: str) -> TaskRecord | None:
        async def get(conn: Conn) -> TaskRecord | None:
            text = await conn.fetchval("SELECT record FROM tasks WHERE id = $1", task_id)
            return TaskRecord.from_row(json.loads(text)) if text is not None else None

        return await self.database.run(get)

    async def put(self, record: TaskRecord) -> None:
        text = canonical_json(record.to_row()).decode()

        async def put(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO tasks (id, principal, tenant, status, created_at, updated_at, record)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET"
                " status = EXCLUDED.status, updated_at = EXCLUDED.updated_at,"
                " record = EXCLUDED.record",
                record.id,
                record.principal,
                record.tenant,
                record.status,
                record.created_at,
                record.updated_at,
                text,
            )

        await self.database.run(put)

    async def owned(self, principal: str, tenant: str | None) -> list[TaskRecord]:
        async def owned(conn: Conn) -> list[TaskRecord]:
            rows = await conn.fetch(
                "SELECT record FROM tasks WHERE principal = $1"
                " AND tenant IS NOT DISTINCT FROM $2 ORDER BY created_at DESC LIMIT $3",
                principal,
                tenant,
                LIST_LIMIT,
            )
            return [TaskRecord.from_row(json.loads(row[0])) for row in rows]

        return await self.database.run(owned)

    async def unfinished(self) -> list[TaskRecord]:
        async def unfinished(conn: Conn) -> list[TaskRecord]:
            rows = await conn.fetch(
                "SELECT record FROM tasks WHERE status IN ('working', 'input_required')"
                " ORDER BY created_at LIMIT $1",
                LIST_LIMIT,
            )
            return [TaskRecord.from_row(json.loads(row[0])) for row in rows]

        return await self.database.run(unfinished)

    async def claim(self, task_id: str, owner: str, until: float, now: float) -> TaskRecord | None:
        async def claim(conn: Conn) -> TaskRecord | None:
            text = await conn.fetchval(
                "UPDATE tasks SET record = record || jsonb_build_object('lease_owner', $2::text,"
                " 'lease_until', $3::float8) WHERE id = $1"
                " AND status IN ('working', 'input_required')"
                " AND (record->>'lease_owner' IS NULL OR record->>'lease_owner' = $2"
                " OR COALESCE((record->>'lease_until')::float8, 0) < $4) RETURNING record",
                task_id,
                owner,
                until,
                now,
            )
            return TaskRecord.from_row(json.loads(text)) if text is not None else None

        return await self.database.run(claim)

    async def close(self) -> None:
        """Nothing: the pool belongs to the pending store."""
