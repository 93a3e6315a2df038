"""The gateway's SQLite file: its schema, versioned migrations, and how it is opened.

Pending calls (`SQLitePendingStore`), tool pins (`SQLitePinStore`), session state
(`SQLiteSessionStore`) and grants (`SQLiteGrantStore`) live in the same file. Its version is
``PRAGMA user_version``; each migration moves it up by one, in one transaction, and a file newer
than this code is refused.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar

import anyio.to_thread

from gateway.approvals.errors import PendingStoreError

__all__ = ["SCHEMA_VERSION", "SQLiteFile", "immediate", "open_database"]

T = TypeVar("T")

# The full record is one canonical JSON text (args and result included); the other columns
# are copies of fields that queries filter on, written from the record in one place.
_V1: Final = (
    """CREATE TABLE pending_calls (
        id TEXT PRIMARY KEY, kind TEXT NOT NULL, state TEXT NOT NULL,
        principal TEXT NOT NULL, session_id TEXT, tool TEXT NOT NULL,
        args_sha256 TEXT NOT NULL, delivered INTEGER NOT NULL,
        created_at REAL NOT NULL, expires_at REAL NOT NULL, updated_at REAL NOT NULL,
        record TEXT NOT NULL)""",
    "CREATE INDEX pending_calls_by_state ON pending_calls (state, expires_at)",
    "CREATE INDEX pending_calls_by_call ON pending_calls (principal, tool, args_sha256)",
    "CREATE INDEX pending_calls_by_created ON pending_calls (created_at)",
    "CREATE TABLE used_nonces (nonce TEXT PRIMARY KEY, expires_at REAL NOT NULL)",
    "CREATE INDEX used_nonces_by_expiry ON used_nonces (expires_at)",
)
_V2: Final = (
    """CREATE TABLE tool_pins (
        server TEXT NOT NULL, tool TEXT NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (server, tool))""",
)
_V3: Final = (
    """CREATE TABLE sessions (
        key TEXT PRIMARY KEY, updated_at REAL NOT NULL, state TEXT NOT NULL)""",
    "CREATE INDEX sessions_by_update ON sessions (updated_at)",
)
_V4: Final = (
    """CREATE TABLE grants (
        id TEXT PRIMARY KEY, scope TEXT NOT NULL, tool TEXT NOT NULL, rule_id TEXT,
        principal TEXT, session_id TEXT, tenant TEXT,
        created_at REAL NOT NULL, expires_at REAL NOT NULL, revoked_at REAL,
        record TEXT NOT NULL)""",
    "CREATE INDEX grants_by_tool ON grants (tool, expires_at)",
    "CREATE INDEX grants_by_tenant ON grants (tenant, created_at)",
)
_V5: Final = (
    """CREATE TABLE tasks (
        id TEXT PRIMARY KEY, principal TEXT NOT NULL, tenant TEXT, status TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, record TEXT NOT NULL)""",
    "CREATE INDEX tasks_by_owner ON tasks (principal, created_at)",
)
# The vault (`gateway.sqlite.vault`): per-principal upstream secrets, sealed (AES-GCM).
_V6: Final = (
    """CREATE TABLE credentials (
        id TEXT NOT NULL, server TEXT NOT NULL, principal TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL,
        key_id TEXT NOT NULL, sealed BLOB NOT NULL, PRIMARY KEY (server, principal))""",
)
# Started ``oauth`` connects (`gateway.sqlite.oauth_flows`), sealed; by the hash of their state.
_V7: Final = (
    """CREATE TABLE oauth_flows (
        key TEXT PRIMARY KEY, server TEXT NOT NULL, principal TEXT NOT NULL,
        expires_at REAL NOT NULL, key_id TEXT NOT NULL, sealed BLOB NOT NULL)""",
    "CREATE INDEX oauth_flows_by_expiry ON oauth_flows (expires_at)",
)
MIGRATIONS: Final = (_V1, _V2, _V3, _V4, _V5, _V6, _V7)
"""Migration ``n`` (from 0) takes the file from version ``n`` to ``n + 1``."""
SCHEMA_VERSION: Final = len(MIGRATIONS)


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that takes the database write lock up front (no upgrade deadlocks)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    with immediate(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise PendingStoreError(
                f"{path!r} has schema version {version}; this lockgate reads up to"
                f" {SCHEMA_VERSION}: upgrade lockgate or point approvals.path at another file"
            )
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def open_database(path: str) -> sqlite3.Connection:
    """A connection to the gateway's SQLite file at ``path``, migrated to `SCHEMA_VERSION`.

    Raises:
        PendingStoreError: the file is not a usable lockgate database (or is newer).
    """
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        _migrate(conn, path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise PendingStoreError(f"Cannot open pending store {path!r}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


class SQLiteFile:
    """One connection to the gateway's SQLite file, opened on first use and used from worker
    threads under a lock (the event loop never waits on the disk)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` in a worker thread."""

        def locked() -> T:
            with self._lock:
                if self._conn is None:
                    self._conn = open_database(self.path)
                return work(self._conn)

        return await anyio.to_thread.run_sync(locked)

    async def close(self) -> None:
        """Close the connection (a later `run` opens it again)."""

        def close() -> None:
            with self._lock:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(close)
