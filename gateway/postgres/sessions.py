"""`PostgresSessionStore`: session states in the shared schema, one versioned row per session.

Besides the `SessionStore` methods (used by the embedded book's write-behind), it offers the
versioned reads and compare-and-set writes that `SharedSessionBook` builds on.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from gateway.postgres.database import Conn, Database
from gateway.sessions.store import SessionStore
from toolsets.canonical import canonical_json
from toolsets.jsonwire import loads

__all__ = ["PostgresSessionStore"]

_IF_CHANGED: Final = (
    "SELECT version, CASE WHEN version <> $2 THEN state END FROM sessions WHERE key = $1"
)
_UPSERT: Final = """INSERT INTO sessions (key, version, updated_at, state) VALUES ($1, 1, $2, $3)
    ON CONFLICT (key) DO UPDATE SET version = sessions.version + 1,
        updated_at = EXCLUDED.updated_at, state = EXCLUDED.state"""
_CREATE: Final = """INSERT INTO sessions (key, version, updated_at, state) VALUES ($1, 1, $2, $3)
    ON CONFLICT (key) DO NOTHING RETURNING version"""
_CAS: Final = """UPDATE sessions SET version = version + 1, updated_at = $3, state = $4
    WHERE key = $1 AND version = $2 RETURNING version"""
_CAS_MANY: Final = """WITH given AS (
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::json[]) AS g (key, version, state)),
    updated AS (UPDATE sessions s SET version = s.version + 1, updated_at = $4, state = g.state
        FROM given g WHERE g.version > 0 AND s.key = g.key AND s.version = g.version
        RETURNING s.key, s.version),
    created AS (INSERT INTO sessions (key, version, updated_at, state)
        SELECT key, 1, $4, state FROM given WHERE version = 0
        ON CONFLICT (key) DO NOTHING RETURNING key, version)
    SELECT key, version FROM updated UNION ALL SELECT key, version FROM created"""
"""`save_if` for many states in one statement."""
_RECENT: Final = """SELECT key, state FROM sessions WHERE (state->>'tenant') IS NOT DISTINCT FROM $1
    ORDER BY updated_at DESC LIMIT $2"""


def _text(state: Mapping[str, Any]) -> str:
    return canonical_json(state).decode()


def _state(text: str | None) -> dict[str, Any] | None:
    state = loads(text) if text is not None else None
    return state if isinstance(state, dict) else None


class PostgresSessionStore(SessionStore):
    """Session states in the shared schema (table ``sessions``).

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def load(self, key: str) -> dict[str, Any] | None:
        found = await self.load_if_changed(key, -1)
        return None if found is None else found[1]

    async def load_if_changed(
        self, key: str, known: int
    ) -> tuple[int, dict[str, Any] | None] | None:
        """The stored version of ``key``'s state, and the state unless its version is ``known``.

        Returns:
            None when no state is stored; else ``(version, state or None)``.
        """

        async def read(conn: Conn) -> tuple[int, dict[str, Any] | None] | None:
            row = await conn.fetchrow(_IF_CHANGED, key, known)
            return None if row is None else (int(row[0]), _state(row[1]))

        return await self.database.run(read)

    async def save_if(self, key: str, state: Mapping[str, Any], version: int) -> int | None:
        """Store ``state`` if the stored version is still ``version`` (0: none stored yet).

        Returns:
            The new version, or None when another writer came first (nothing was written).
        """
        text, now = _text(state), time.time()

        async def write(conn: Conn) -> int | None:
            if version == 0:
                created = await conn.fetchval(_CREATE, key, now, text)
                return None if created is None else int(created)
            saved = await conn.fetchval(_CAS, key, version, now, text)
            return None if saved is None else int(saved)

        return await self.database.run(write)

    async def save_all_if(
        self, states: Mapping[str, tuple[Mapping[str, Any], int]]
    ) -> dict[str, int]:
        """`save_if` for each ``key: (state, version)`` in one statement.

        Returns:
            The new version of each state saved; a key missing lost to another writer.
        """
        keys = list(states)
        versions = [states[key][1] for key in keys]
        texts, now = [_text(states[key][0]) for key in keys], time.time()

        async def write(conn: Conn) -> dict[str, int]:
            rows = await conn.fetch(_CAS_MANY, keys, versions, texts, now)
            return {str(row[0]): int(row[1]) for row in rows}

        return await self.database.run(write)

    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        rows = [(key, time.time(), _text(state)) for key, state in states.items()]

        async def save(conn: Conn) -> None:
            async with conn.transaction():
                await conn.executemany(_UPSERT, rows)

        await self.database.run(save)

    async def recent(self, tenant: str | None, limit: int) -> list[tuple[str, dict[str, Any]]]:
        """The ``limit`` states of ``tenant`` saved last, by every replica (newest first)."""

        async def read(conn: Conn) -> list[tuple[str, dict[str, Any]]]:
            rows = await conn.fetch(_RECENT, tenant, limit)
            return [(str(row[0]), state) for row in rows if (state := _state(row[1])) is not None]

        return await self.database.run(read)

    async def close(self) -> None:
        """Nothing: the pool belongs to the pending store."""
