"""`Database`: one process's connections to the shared PostgreSQL schema.

The pool opens on first use, after the schema is migrated (`gateway.postgres.migrations`).
Every query goes through `Database.run`, which maps an unreachable server to
`toolsets.errors.StoreUnavailable` naming host, port and the fix, and rides out a short outage:
a connection that broke (a server restart) is closed, replaced and the work tried again, for up
to ``connect_timeout`` seconds. The pool recovers by itself; the gateway is never restarted.
`Database.health` says whether the server was reachable at last use (for ``/healthz``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeAlias, TypeVar

import anyio
import asyncpg

from gateway.background.health import StoreHealth
from gateway.config.storage import redact_dsn
from gateway.postgres.migrations import migrate
from gateway.postgres.settings import PostgresSettings
from toolsets.errors import StoreUnavailable

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

__all__ = ["TRANSIENT", "Conn", "Database", "unreachable"]

T = TypeVar("T")
log = logging.getLogger("lockgate.postgres")

TRANSIENT: Final[tuple[type[BaseException], ...]] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, starting up
    asyncpg.exceptions.TooManyConnectionsError,
    # A connection the server dropped mid-protocol (a stop), seen on its next use as "cannot
    # switch to state N; another operation is in progress": that connection is done for.
    asyncpg.exceptions.InternalClientError,
)
"""Errors that say the server cannot be reached right now (it may come back)."""
_CONNECT_ERRORS: Final[tuple[type[BaseException], ...]] = (*TRANSIENT, asyncpg.PostgresError)
"""Errors connecting: unreachable, or refused (authentication, no such database)."""
Conn: TypeAlias = "PoolConnectionProxy[asyncpg.Record]"
"""A pooled connection, as `Database.run` hands it to its work."""
_FIRST_RETRY: Final = 0.05


def unreachable(settings: PostgresSettings, exc: BaseException) -> StoreUnavailable:
    """The error for a database that cannot be reached or refuses us, naming it and the fix."""
    reason = redact_dsn(str(exc) or type(exc).__name__)
    if isinstance(exc, TRANSIENT):
        fix = "start PostgreSQL there, or fix storage.dsn"
    else:
        fix = "fix storage.dsn (user, password, database)"
    return StoreUnavailable(f"{settings.where} is unreachable ({reason}): {fix}")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """What a connection returned to the pool needs beyond asyncpg's own rollback of an open
    transaction: nothing. Work on pooled connections sets no session state (``SET LOCAL``,
    transaction advisory locks; ``LISTEN`` and session locks are on `Database.connect`
    connections), so asyncpg's reset query (``RESET ALL``, ``UNLISTEN *``, ...), one round
    trip per release, is skipped."""


class Database:
    """The pool of one process (`PostgresSettings.pool_size` connections), opened on first use.

    Args:
        settings: How to reach the database.
    """

    def __init__(self, settings: PostgresSettings) -> None:
        self.settings = settings
        self._pool: asyncpg.Pool | None = None
        self._opening = anyio.Lock()
        self._closed = False
        self._outage: str | None = None  # why the server is unreachable, while it is

    def health(self) -> StoreHealth:
        """Whether the server answered at last use (or the notifications' connection is up)."""
        return StoreHealth(name=self.settings.where, up=self._outage is None, detail=self._outage)

    def went_away(self, error: BaseException) -> None:
        """Record that the server cannot be reached (``error`` says why); see `health`."""
        if self._outage is None:
            self._outage = str(
                error if isinstance(error, StoreUnavailable) else unreachable(self.settings, error)
            )

    def came_back(self) -> None:
        """Record that the server answered again; see `health`."""
        if self._outage is not None:
            log.info("%s is reachable again", self.settings.where)
        self._outage = None

    async def connect(self) -> asyncpg.Connection:
        """A connection of its own (not from the pool), ``search_path`` set to the schema.

        Raises:
            StoreUnavailable: The server cannot be reached, or refused the connection.
        """
        try:
            with anyio.fail_after(self.settings.connect_timeout):
                return await asyncpg.connect(
                    self.settings.dsn,
                    timeout=self.settings.connect_timeout,
                    server_settings={"search_path": self.settings.schema},
                )
        except _CONNECT_ERRORS as exc:
            raise unreachable(self.settings, exc) from None

    async def migrate(self) -> tuple[int, int]:
        """Bring the schema up to date now; (version before, version after).

        Raises:
            StoreUnavailable: The server cannot be reached.
            PendingStoreError: The schema is newer than this code.
        """
        conn = await self.connect()
        try:
            return await migrate(conn, self.settings.schema, self.settings.where)
        finally:
            await conn.close()

    async def pool(self) -> asyncpg.Pool:
        """The pool, opened (and the schema migrated) the first time.

        Raises:
            StoreUnavailable: The server cannot be reached.
            PendingStoreError: The schema is newer than this code.
        """
        if self._pool is None:
            async with self._opening:
                if self._closed:
                    raise StoreUnavailable(f"{self.settings.where}: the store is closed")
                if self._pool is None:
                    await self.migrate()
                    self._pool = await self._open_pool()
        return self._pool

    async def _open_pool(self) -> asyncpg.Pool:
        try:
            pool = await asyncpg.create_pool(
                self.settings.dsn,
                min_size=0,  # no background reconnects: a connection is made when needed
                max_size=self.settings.pool_size,
                timeout=self.settings.connect_timeout,
                server_settings={"search_path": self.settings.schema},
                reset=_keep_session,
            )
        except _CONNECT_ERRORS as exc:
            raise unreachable(self.settings, exc) from None
        assert pool is not None
        return pool

    async def run(self, work: Callable[[Conn], Awaitable[T]]) -> T:
        """``work(connection)`` on a pooled connection; tried again while the server is
        unreachable, for up to ``connect_timeout`` seconds.

        ``work`` must be safe to run again after a broken connection: a read, or a write that
        checks whether its earlier attempt committed (see `PostgresPendingStore`).

        Raises:
            StoreUnavailable: The server stayed unreachable.
        """
        deadline = anyio.current_time() + self.settings.connect_timeout
        pause = _FIRST_RETRY
        while not self._closed:
            try:
                pool = await self.pool()
                async with pool.acquire(timeout=self.settings.connect_timeout) as conn:
                    result = await _on_sound(conn, work)
                self.came_back()
                return result
            except StoreUnavailable as exc:
                failure: BaseException = exc
            except TRANSIENT as exc:
                failure = exc
            if anyio.current_time() + pause > deadline:
                error = failure if isinstance(failure, StoreUnavailable) else None
                error = error or unreachable(self.settings, failure)
                self.went_away(error)
                raise error from None
            log.debug("database unreachable, trying again: %r", failure)
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.5)
        raise StoreUnavailable(f"{self.settings.where}: the store is closed")

    async def close(self) -> None:
        """Close the pool (idempotent); later use raises `StoreUnavailable`."""
        async with self._opening:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(5) as waited:
                await pool.close()  # waits for connections in use to be released
            if waited.cancelled_caught:
                pool.terminate()


async def _on_sound(conn: Conn, work: Callable[[Conn], Awaitable[T]]) -> T:
    """``work(conn)``; a connection that broke under it is closed, so the pool never hands it
    out again (asyncpg would, and every later use would fail)."""
    try:
        return await work(conn)
    except TRANSIENT:
        conn.terminate()
        raise
