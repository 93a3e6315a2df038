"""`SQLitePinStore`: tool pins in the gateway's SQLite file (table ``tool_pins``), so a definition
changed while the gateway was down is caught at start-up, and one changed by another process on
the same file is seen within `POLL_INTERVAL` (``PRAGMA data_version``)."""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Final

import anyio

from gateway.pins.record import PinRecord
from gateway.pins.store import PinStore
from gateway.sqlite.schema import SQLiteFile
from toolsets.canonical import canonical_json

__all__ = ["POLL_INTERVAL", "SQLitePinStore"]

POLL_INTERVAL: Final = 0.5
"""Seconds between checks whether another connection wrote the file."""


class SQLitePinStore(PinStore):
    """Pins in the gateway's SQLite file, one row per upstream tool (its record as JSON)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)
        self._seen: int | None = None

    async def load(self) -> list[PinRecord]:
        def load(conn: sqlite3.Connection) -> list[PinRecord]:
            rows = conn.execute("SELECT record FROM tool_pins ORDER BY server, tool")
            return [PinRecord.from_row(json.loads(record)) for (record,) in rows]

        return await self._file.run(load)

    async def save(self, record: PinRecord) -> None:
        text = canonical_json(record.to_row()).decode()

        def save(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO tool_pins (server, tool, record) VALUES (?, ?, ?)",
                (record.server, record.tool, text),
            )

        await self._file.run(save)

    async def changed(self) -> None:
        """Return when another connection committed to the file since the last call (its
        ``PRAGMA data_version`` moved: pins, or pending calls beside them), checked every
        `POLL_INTERVAL` seconds; the first call returns at once."""
        while True:
            version = await self._file.run(_data_version)
            seen, self._seen = self._seen, version
            if seen != version:
                return
            await anyio.sleep(POLL_INTERVAL)

    async def close(self) -> None:
        await self._file.close()


def _data_version(conn: sqlite3.Connection) -> int:
    version: int = conn.execute("PRAGMA data_version").fetchone()[0]
    return version
