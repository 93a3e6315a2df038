"""Fixtures of the analytics tests: a pending store of each backend (memory, SQLite in a
temporary file, PostgreSQL in a fresh schema) with a clock the test sets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from analytics_support import Clock
from pg_support import fresh_schema, pg_settings

from gateway.approvals import PendingStore
from gateway.memory.pending import MemoryPendingStore
from gateway.postgres.database import Database
from gateway.postgres.pending import PostgresPendingStore
from gateway.sqlite.pending import SQLitePendingStore


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def clocked_store(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[PendingStore]:
    """A store of the parametrized backend on ``clock``."""
    async with fresh_schema() as schema:
        if request.param == "memory":
            store: PendingStore = MemoryPendingStore(clock=clock)
        elif request.param == "sqlite":
            store = SQLitePendingStore(tmp_path / "pending.db", clock=clock)
        else:
            store = PostgresPendingStore(Database(pg_settings(schema)), clock=clock)
        async with store:
            yield store
