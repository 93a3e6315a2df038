"""`SQLitePinStore`: tool pins in the gateway's SQLite file (table ``tool_pins``), so a definition
changed while the gateway was down is caught at start-up."""

from __future__ import annotations

import json
import os
import sqlite3

from gateway.pins.record import PinRecord
from gateway.pins.store import PinStore
from gateway.sqlite.schema import SQLiteFile
from toolsets.canonical import canonical_json

__all__ = ["SQLitePinStore"]


class SQLitePinStore(PinStore):
    """Pins in the gateway's SQLite file, one row per upstream tool (its record as JSON)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)

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

    async def close(self) -> None:
        await self._file.close()
