"""`SQLiteSessionStore`: session states in the gateway's SQLite file (table ``sessions``), so a
session's history survives a restart."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from gateway.sessions.store import SessionStore
from gateway.sqlite.schema import SQLiteFile, immediate
from toolsets.canonical import canonical_json
from toolsets.jsonwire import loads

__all__ = ["SQLiteSessionStore"]


class SQLiteSessionStore(SessionStore):
    """States in the gateway's SQLite file, one row per session."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)

    async def load(self, key: str) -> dict[str, Any] | None:
        def load(conn: sqlite3.Connection) -> dict[str, Any] | None:
            row = conn.execute("SELECT state FROM sessions WHERE key = ?", (key,)).fetchone()
            state = loads(row[0]) if row is not None else None
            return state if isinstance(state, dict) else None

        return await self._file.run(load)

    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        now = time.time()
        rows = [(key, now, canonical_json(state).decode()) for key, state in states.items()]

        def save(conn: sqlite3.Connection) -> None:
            # Written behind anyway: no fsync per flush (WAL; durable with the next checkpoint).
            conn.execute("PRAGMA synchronous = NORMAL")
            with immediate(conn):
                conn.executemany(
                    "INSERT OR REPLACE INTO sessions (key, updated_at, state) VALUES (?, ?, ?)",
                    rows,
                )

        await self._file.run(save)

    async def close(self) -> None:
        await self._file.close()
