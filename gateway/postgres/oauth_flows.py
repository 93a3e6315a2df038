"""`PostgresFlowStore`: started ``oauth`` connects in the shared schema (table ``oauth_flows``),
sealed, so the browser's callback may land on any replica and a state is taken once by one."""

from __future__ import annotations

from gateway.credentials.flow_store import SealedFlow
from gateway.postgres.database import Conn, Database

__all__ = ["PostgresFlowStore"]

_COLUMNS = "key, server, principal, expires_at, key_id, sealed"


class PostgresFlowStore:
    """Started connects in PostgreSQL.

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def put(self, flow: SealedFlow, *, forget_before: float) -> None:
        f = flow

        async def put(conn: Conn) -> None:
            async with conn.transaction():
                await conn.execute("DELETE FROM oauth_flows WHERE expires_at < $1", forget_before)
                await conn.execute(
                    f"INSERT INTO oauth_flows ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
                    " ON CONFLICT (key) DO NOTHING",  # a retry after a lost commit
                    f.key, f.server, f.principal, f.expires_at, f.key_id, f.sealed,
                )  # fmt: skip

        await self.database.run(put)

    async def server_of(self, key: str) -> str | None:
        async def server_of(conn: Conn) -> str | None:
            found = await conn.fetchval("SELECT server FROM oauth_flows WHERE key = $1", key)
            return None if found is None else str(found)

        return await self.database.run(server_of)

    async def take(self, key: str, server: str) -> SealedFlow | None:
        async def take(conn: Conn) -> SealedFlow | None:
            row = await conn.fetchrow(
                f"DELETE FROM oauth_flows WHERE key = $1 AND server = $2 RETURNING {_COLUMNS}",
                key,
                server,
            )
            if row is None:
                return None
            return SealedFlow(row[0], row[1], row[2], row[3], row[4], bytes(row[5]))

        return await self.database.run(take)
