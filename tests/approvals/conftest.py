"""Every store behaviour test runs against both backends: memory and SQLite in a temporary file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pending_support import StoreFactory

from gateway.approvals import MemoryPendingStore, PendingStore, SQLitePendingStore


@pytest.fixture(params=["memory", "sqlite"])
async def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Builds stores of the parametrized backend (SQLite ones share one file); closes them all."""
    made: list[PendingStore] = []

    def make(**options: Any) -> PendingStore:
        if request.param == "memory":
            store: PendingStore = MemoryPendingStore(**options)
        else:
            store = SQLitePendingStore(tmp_path / "pending.db", **options)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


@pytest.fixture
def store(make_store: StoreFactory) -> PendingStore:
    """A store of the parametrized backend."""
    return make_store()
