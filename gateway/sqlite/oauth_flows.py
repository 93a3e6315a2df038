"""`SQLiteFlowStore`: started ``oauth`` connects in the gateway's SQLite file (table
``oauth_flows``), sealed.

A connect is rare and human-paced: each use opens the file and closes it again, so the store
holds nothing open between uses and needs no closing.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from gateway.credentials.flow_store import SealedFlow
from gateway.sqlite.schema import immediate, open_database

__all__ = ["SQLiteFlowStore"]

T = TypeVar("T")
_COLUMNS = "key, server, principal, expires_at, key_id, sealed"


class SQLiteFlowStore:
    """Started connects in the gateway's SQLite file at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def once() -> T:
            conn = open_database(self.path)
            try:
                return work(conn)
            finally:
                conn.close()

        return await anyio.to_thread.run_sync(once)

    async def put(self, flow: SealedFlow, *, forget_before: float) -> None:
        f = flow
        values = (f.key, f.server, f.principal, f.expires_at, f.key_id, f.sealed)

        def put(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                conn.execute("DELETE FROM oauth_flows WHERE expires_at < ?", (forget_before,))
                conn.execute(
                    f"INSERT INTO oauth_flows ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)", values
                )

        await self._run(put)

    async def server_of(self, key: str) -> str | None:
        def server_of(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT server FROM oauth_flows WHERE key = ?", (key,)).fetchone()
            return None if row is None else str(row[0])

        return await self._run(server_of)

    async def take(self, key: str, server: str) -> SealedFlow | None:
        def take(conn: sqlite3.Connection) -> SealedFlow | None:
            row = conn.execute(
                f"DELETE FROM oauth_flows WHERE key = ? AND server = ? RETURNING {_COLUMNS}",
                (key, server),
            ).fetchone()
            if row is None:
                return None
            key_, server_, principal, expires, key_id, sealed = row
            return SealedFlow(key_, server_, principal, expires, key_id, bytes(sealed))

        return await self._run(take)
