"""`RefreshLocks`: one refresh of a principal's tokens at a time, across every replica.

Refresh tokens rotate: two replicas refreshing the same grant at once would spend one refresh
token twice, and an authorization server that detects the reuse revokes the grant. With the
vault in PostgreSQL the lock is a transaction-scoped advisory lock (held on a pooled connection
while the refresh runs, released at commit, or by the server if the replica dies); otherwise one
process holds the vault and an in-process lock per grant is enough.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from gateway.postgres.database import Database

__all__ = ["LocalLocks", "PostgresLocks", "RefreshLocks", "lock_name"]


def lock_name(key: str) -> str:
    """The name whose ``hashtext`` is ``key``'s advisory lock: in hex, as a key holds NUL
    (``server\0principal``), which PostgreSQL text refuses."""
    return f"oauth:{key.encode().hex()}"


class RefreshLocks(Protocol):
    """Holds the lock of one grant (``key``) for the duration of a ``with`` block."""

    def hold(self, key: str) -> contextlib.AbstractAsyncContextManager[None]: ...


class LocalLocks:
    """One `anyio.Lock` per grant, in this process."""

    def __init__(self) -> None:
        self._locks: dict[str, anyio.Lock] = {}
        self._users: dict[str, int] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(key, anyio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                yield
        finally:
            self._users[key] -= 1
            if not self._users[key]:  # nobody waits: forget it
                del self._users[key], self._locks[key]


class PostgresLocks:
    """A transaction-scoped advisory lock per grant in the shared database (and the local lock
    first, so one replica's callers queue without holding pooled connections)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.local = LocalLocks()

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        async with self.local.hold(key):
            pool = await self.database.pool()
            async with pool.acquire() as conn, conn.transaction():
                name = lock_name(key)
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", name)
                yield
