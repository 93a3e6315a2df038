"""`SQLiteVaultStore`: sealed vault records in the gateway's SQLite file (table ``credentials``)."""

from __future__ import annotations

import os
import sqlite3

from gateway.sqlite.schema import SQLiteFile
from gateway.vault.record import Connection, SealedRecord

__all__ = ["SQLiteVaultStore"]

_COLUMNS = "id, server, principal, created_at, updated_at, key_id, sealed"
Row = tuple[str, str, str, float, float, str, bytes]


def _record(row: Row) -> SealedRecord:
    id, server, principal, created, updated, key, sealed = row
    connection = Connection(
        id=id, server=server, principal=principal, created_at=created, updated_at=updated
    )
    return SealedRecord(connection=connection, key_id=key, sealed=bytes(sealed))


class SQLiteVaultStore:
    """Vault records in the gateway's SQLite file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)

    async def get(self, server: str, principal: str) -> SealedRecord | None:
        def get(conn: sqlite3.Connection) -> SealedRecord | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM credentials WHERE server = ? AND principal = ?",
                (server, principal),
            ).fetchone()
            return None if row is None else _record(row)

        return await self._file.run(get)

    async def put(self, record: SealedRecord) -> None:
        c = record.connection
        values = (c.id, c.server, c.principal, c.created_at, c.updated_at)

        def put(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT OR REPLACE INTO credentials ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*values, record.key_id, record.sealed),
            )

        await self._file.run(put)

    async def delete(self, server: str, principal: str) -> bool:
        def delete(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM credentials WHERE server = ? AND principal = ?", (server, principal)
            )
            return cursor.rowcount > 0

        return await self._file.run(delete)

    async def all(self, principal: str | None = None) -> list[SealedRecord]:
        def all_(conn: sqlite3.Connection) -> list[SealedRecord]:
            where, params = ("WHERE principal = ?", (principal,)) if principal else ("", ())
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM credentials {where} ORDER BY server, principal", params
            )
            return [_record(row) for row in rows]

        return await self._file.run(all_)

    async def close(self) -> None:
        await self._file.close()
