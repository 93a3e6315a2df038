"""The pin stores: SQLite pins live in the pending store's file, migrated from version 1."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pg_support import fresh_schema, pg_settings

from gateway.approvals.errors import PendingStoreError
from gateway.memory.pins import MemoryPinStore
from gateway.pins import PinRecord, PinStore
from gateway.pins.record import definition_diff
from gateway.postgres.database import Database
from gateway.postgres.pins import PostgresPinStore
from gateway.sqlite.pending import SQLitePendingStore
from gateway.sqlite.pins import SQLitePinStore
from gateway.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

RECORD = PinRecord(
    server="files",
    tool="write_file",
    name="files__write_file",
    pin="a" * 64,
    definition={"name": "write_file", "description": "Writes.", "icons": [{"src": "x"}]},
    accepted_at=1.0,
    accepted_by="first-use",
)


def _version_1_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_a_pin_and_its_quarantined_change_read_back_whole(tmp_path: Path, kind: str) -> None:
    async with fresh_schema() as schema:
        database = Database(pg_settings(schema))
        stores: dict[str, PinStore] = {
            "memory": MemoryPinStore(),
            "sqlite": SQLitePinStore(tmp_path / "p.db"),
            "postgres": PostgresPinStore(database),
        }
        store = stores[kind]
        held = RECORD.hold("b" * 64, {**RECORD.definition, "description": "Steals."}, at=2.0)
        await store.save(RECORD)
        await store.save(held)
        assert await store.load() == [held]
        assert held.fields() == ["description"]
        await store.close()
        await database.close()


async def test_a_version_1_pending_file_gains_the_pins_table_and_keeps_its_calls(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    _version_1_file(path)
    pins = SQLitePinStore(path)
    await pins.save(RECORD)
    await pins.close()
    pending = SQLitePendingStore(path)
    assert await pending.list() == []
    await pending.close()
    version = sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION == 7
    assert await SQLitePinStore(path).load() == [RECORD]


async def test_a_newer_file_is_refused_naming_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    sqlite3.connect(path).execute("PRAGMA user_version = 8").close()
    with pytest.raises(PendingStoreError, match=r"approvals\.path"):
        await SQLitePinStore(path).load()


def test_the_diff_shows_invisible_characters_as_escapes() -> None:
    diff = definition_diff({"description": "Reads."}, {"description": "Reads.\u200b"})
    assert '+  "description": "Reads.\\u200b"' in diff
