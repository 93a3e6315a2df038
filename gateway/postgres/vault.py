"""`PostgresVaultStore`: sealed vault records in the shared schema (table ``credentials``), so
every replica reaches upstreams with the same per-principal secrets."""

from __future__ import annotations

from typing import Any

from gateway.postgres.database import Conn, Database
from gateway.vault.record import Connection, SealedRecord

__all__ = ["PostgresVaultStore"]

_COLUMNS = "id, server, principal, created_at, updated_at, key_id, sealed"


def _record(row: Any) -> SealedRecord:
    connection = Connection(
        id=row[0], server=row[1], principal=row[2], created_at=row[3], updated_at=row[4]
    )
    return SealedRecord(connection=connection, key_id=row[5], sealed=bytes(row[6]))


class PostgresVaultStore:
    """Vault records in PostgreSQL.

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def get(self, server: str, principal: str) -> SealedRecord | None:
        async def get(conn: Conn) -> SealedRecord | None:
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM credentials WHERE server = $1 AND principal = $2",
                server,
                principal,
            )
            return None if row is None else _record(row)

        return await self.database.run(get)

    async def put(self, record: SealedRecord) -> None:
        c = record.connection

        async def put(conn: Conn) -> None:
            await conn.execute(
                f"INSERT INTO credentials ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                " ON CONFLICT (server, principal) DO UPDATE SET id = EXCLUDED.id,"
                " updated_at = EXCLUDED.updated_at, key_id = EXCLUDED.key_id,"
                " sealed = EXCLUDED.sealed",
                c.id, c.server, c.principal, c.created_at, c.updated_at,
                record.key_id, record.sealed,
            )  # fmt: skip

        await self.database.run(put)

    async def delete(self, server: str, principal: str) -> bool:
        async def delete(conn: Conn) -> bool:
            status = await conn.execute(
                "DELETE FROM credentials WHERE server = $1 AND principal = $2", server, principal
            )
            return str(status) != "DELETE 0"

        return await self.database.run(delete)

    async def all(self, principal: str | None = None) -> list[SealedRecord]:
        async def all_(conn: Conn) -> list[SealedRecord]:
            if principal:
                rows = await conn.fetch(
                    f"SELECT {_COLUMNS} FROM credentials WHERE principal = $1"
                    " ORDER BY server, principal",
                    principal,
                )
            else:
                rows = await conn.fetch(
                    f"SELECT {_COLUMNS} FROM credentials ORDER BY server, principal"
                )
            return [_record(row) for row in rows]

        return await self.database.run(all_)

    async def close(self) -> None:
        """Nothing: the pool belongs to the pending store."""
