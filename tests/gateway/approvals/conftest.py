"""Every store behaviour test runs against every backend: memory, SQLite in a temporary file,
and PostgreSQL in a fresh schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pending_support import StoreFactory
from pg_support import fresh_schema, pg_settings

from gateway.approvals import PendingStore
from gateway.memory.pending import MemoryPendingStore
from gateway.postgres.database import Database
from gateway.postgres.pending import PostgresPendingStore
from gateway.sqlite.pending import SQLitePendingStore


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Builds stores of the parametrized backend (SQLite ones share one file, PostgreSQL ones
    one fresh schema, like processes sharing them); closes them all."""
    made: list[PendingStore] = []
    async with fresh_schema() as schema:

        def make(**options: Any) -> PendingStore:
            if request.param == "memory":
                store: PendingStore = MemoryPendingStore(**options)
            elif request.param == "sqlite":
                store = SQLitePendingStore(tmp_path / "pending.db", **options)
            else:
                store = PostgresPendingStore(Database(pg_settings(schema)), **options)
            made.append(store)
            return store

        yield make
        for store in made:
            await store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> PendingStore:
    """A store of the parametrized backend."""
    return make_store()
