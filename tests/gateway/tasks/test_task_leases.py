"""Task leases in each shared store (the SQLite file, PostgreSQL): one compare-and-set gives a
task to exactly one replica however many claim it at once; a live lease is never taken, a lapsed
or given-up one is; an ended task is nobody's; the unfinished tasks are what replicas resume."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from pg_support import fresh_schema, pg_settings

from gateway.postgres.database import Database
from gateway.postgres.tasks import PostgresTaskStore
from gateway.sqlite.tasks import SQLiteTaskStore
from gateway.tasks.record import TaskRecord, new_task_id
from gateway.tasks.store import TaskStore


@contextlib.asynccontextmanager
async def _stores(kind: str, tmp_path: Path) -> AsyncIterator[list[TaskStore]]:
    """Two replicas' stores on one backend."""
    if kind == "sqlite":
        stores: list[TaskStore] = [SQLiteTaskStore(tmp_path / "tasks.db") for _ in range(2)]
        try:
            yield stores
        finally:
            for store in stores:
                await store.close()
        return
    async with fresh_schema() as schema:
        databases = [Database(pg_settings(schema)) for _ in range(2)]
        try:
            yield [PostgresTaskStore(database) for database in databases]
        finally:
            for database in databases:
                await database.close()


def _task(**fields: Any) -> TaskRecord:
    now = time.time()
    base = TaskRecord(
        id=new_task_id(),
        upstream="jobs",
        upstream_task_id="upstream-1",
        principal="agent:a",
        tenant=None,
        session_id=None,
        tool="jobs__job",
        created_at=now,
        updated_at=now,
    )
    return replace(base, **fields)


KINDS = [pytest.param("sqlite", id="sqlite"), pytest.param("postgres", id="postgres")]


@pytest.mark.parametrize("kind", KINDS)
async def test_of_many_replicas_claiming_an_orphan_at_once_exactly_one_wins(
    kind: str, tmp_path: Path
) -> None:
    task = _task(lease_owner="gone", lease_until=time.time() - 1)  # its replica crashed
    won: list[str] = []
    with anyio.fail_after(60):
        async with _stores(kind, tmp_path) as (a, b):
            await a.put(task)

            async def claim(store: TaskStore, owner: str) -> None:
                now = time.time()
                if await store.claim(task.id, owner, now + 30, now) is not None:
                    won.append(owner)

            async with anyio.create_task_group() as tg:
                for index in range(8):
                    tg.start_soon(claim, (a, b)[index % 2], f"replica-{index}")
            stored = await b.get(task.id)
    assert len(won) == 1
    assert stored is not None
    assert stored.lease_owner == won[0]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_live_lease_is_kept_a_given_up_one_is_taken_and_an_ended_task_is_nobodys(
    kind: str, tmp_path: Path
) -> None:
    live, ended = _task(), _task(status="completed")
    with anyio.fail_after(60):
        async with _stores(kind, tmp_path) as (a, b):
            await a.put(live)
            await a.put(ended)
            now = time.time()
            first = await a.claim(live.id, "a", now + 30, now)
            renewed = await a.claim(live.id, "a", now + 60, now)
            refused = await b.claim(live.id, "b", now + 30, now)
            await a.claim(live.id, "a", 0.0, now)  # a stops: gives the lease up
            taken = await b.claim(live.id, "b", now + 30, now)
            nobody = await b.claim(ended.id, "b", now + 30, now)
            unfinished = [r.id for r in await b.unfinished()]
    assert first is not None
    assert renewed is not None
    assert renewed.lease_until == pytest.approx(now + 60)
    assert refused is None
    assert taken is not None
    assert taken.lease_owner == "b"
    assert taken.tool == "jobs__job"  # the rest of the record is kept
    assert nobody is None
    assert unfinished == [live.id]
