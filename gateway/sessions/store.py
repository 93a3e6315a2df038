"""Where per-session state is kept: beside the pending calls, in the same backend.

`MemorySessionStore` goes with the memory pending store; `SQLiteSessionStore` uses the pending
store's SQLite file (table ``sessions``), so a session's history survives a restart. A state is
one JSON text (`policies.session.SessionState.to_json`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from gateway.sqlite.schema import SQLiteFile, immediate
from toolsets.canonical import canonical_json
from toolsets.jsonwire import loads

__all__ = ["MemorySessionStore", "SQLiteSessionStore", "SessionStore"]


class SessionStore(ABC):
    """Session states by key (``principal:session``)."""

    @abstractmethod
    async def load(self, key: str) -> dict[str, Any] | None:
        """The state saved for ``key``, if any."""

    @abstractmethod
    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        """Insert or replace these states, in one transaction; durable when it returns."""

    @abstractmethod
    async def close(self) -> None:
        """Release the backend."""


class MemorySessionStore(SessionStore):
    """States in memory (lost with the process)."""

    def __init__(self) -> None:
        self._states: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        return self._states.get(key)

    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        self._states.update({key: dict(state) for key, state in states.items()})

    async def close(self) -> None:
        return None


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
            with immediate(conn):
                conn.executemany(
                    "INSERT OR REPLACE INTO sessions (key, updated_at, state) VALUES (?, ?, ?)",
                    rows,
                )

        await self._file.run(save)

    async def close(self) -> None:
        await self._file.close()
