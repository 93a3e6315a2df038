"""`PostgresPinStore`: tool pins in the shared schema (table ``tool_pins``), one row per
upstream tool, so every replica reviews its catalogue against the same pins."""

from __future__ import annotations

import json

from gateway.pins.record import PinRecord
from gateway.pins.store import PinStore
from gateway.postgres.database import Conn, Database
from toolsets.canonical import canonical_json

__all__ = ["PostgresPinStore"]


class PostgresPinStore(PinStore):
    """Pins in PostgreSQL.

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def load(self) -> list[PinRecord]:
        async def load(conn: Conn) -> list[PinRecord]:
            rows = await conn.fetch("SELECT record FROM tool_pins ORDER BY server, tool")
            return [PinRecord.from_row(json.loads(row[0])) for row in rows]

        return await self.database.run(load)

    async def save(self, record: PinRecord) -> None:
        text = canonical_json(record.to_row()).decode()

        async def save(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO tool_pins (server, tool, record) VALUES ($1, $2, $3)"
                " ON CONFLICT (server, tool) DO UPDATE SET record = EXCLUDED.record",
                record.server,
                record.tool,
                text,
            )

        await self.database.run(save)

    async def close(self) -> None:
        """Nothing: the pool belongs to the pending store."""
