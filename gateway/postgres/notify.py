"""`Notifications`: one dedicated connection per replica that ``LISTEN``s for pending-call
changes and holds the replica's liveness lock; it reconnects by itself.

A transition committed by any replica fires ``NOTIFY <schema>_pending, '<id>'`` (a trigger,
see `gateway.postgres.migrations`), so the replica holding that call wakes at once. While the
connection is down notifications are lost: after every (re)connect ``on_connect`` runs, and
the store wakes all its waiters to re-read (the event log reads what it missed from the table).
The connection is the replica's first to see an outage: losing it marks the database away
(`Database.went_away`), reconnecting marks it back, and reconnects are retried until they
succeed, whatever fails (`gateway.background.resilient.until_done`).

The liveness lock is a session advisory lock ``(LIVENESS_CLASS, key)``: the server drops it
with the connection, so a replica that died (even by SIGKILL) no longer holds it, and its
``executing`` calls are known to be orphaned (`PostgresPendingStore._orphans`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Final

import anyio
import asyncpg
from anyio.abc import TaskStatus

from gateway.background.resilient import until_done
from gateway.postgres.database import TRANSIENT, Database
from toolsets.errors import StoreUnavailable

__all__ = ["LIVENESS_CLASS", "Notifications", "new_liveness_key"]

log = logging.getLogger("lockgate.postgres")

LIVENESS_CLASS: Final = 0x6C6B6774
"""The first key of every replica's liveness lock (``pg_locks.classid``): "lkgt"."""
_PROBE_EVERY: Final = 5.0
"""Seconds between checks that an idle connection is still alive."""


def new_liveness_key() -> int:
    """A random second key (``pg_locks.objid``) for one replica's liveness lock."""
    return secrets.randbelow(2**31 - 2) + 1


class Notifications:
    """Listens on ``channel`` for as long as `run` runs.

    Args:
        database: Where to connect.
        channel: The channel to ``LISTEN`` on.
        on_notify: Called with each payload (a pending call's id), on the event loop.
        on_connect: Called after each (re)connect, once listening.
        liveness_key: The replica's liveness lock key, held while connected.
    """

    def __init__(
        self,
        database: Database,
        channel: str,
        *,
        on_notify: Callable[[str], None],
        on_connect: Callable[[], None],
        liveness_key: int,
    ) -> None:
        self._database = database
        self._channel = channel
        self._on_notify = on_notify
        self._on_connect = on_connect
        self._key = liveness_key

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; ``task_status.started()`` once first listening.

        Raises:
            StoreUnavailable: The first connection failed (later ones are retried forever).
        """
        conn = await self._listening()
        task_status.started()
        where = self._database.settings.where
        while True:
            try:
                lost = await self._until_lost(conn)
            finally:
                conn.terminate()
            self._database.went_away(lost)
            log.warning("notifications from %s lost; reconnecting", where)
            conn = await until_done(self._listening, what="listening for notifications", logger=log)

    async def _listening(self) -> asyncpg.Connection:
        conn = await self._database.connect()
        try:
            await conn.execute("SELECT pg_advisory_lock($1, $2)", LIVENESS_CLASS, self._key)
            await conn.add_listener(self._channel, self._notified)
        except Exception as exc:
            conn.terminate()
            if isinstance(exc, TRANSIENT):
                raise StoreUnavailable(f"{self._database.settings.where}: {exc!r}") from None
            raise
        self._database.came_back()
        self._on_connect()
        return conn

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        self._on_notify(str(payload))

    async def _until_lost(self, conn: asyncpg.Connection) -> BaseException:
        """Return when ``conn`` closes (the server went away) or stops answering a probe; why."""
        lost = anyio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        while not conn.is_closed():
            with anyio.move_on_after(_PROBE_EVERY):
                await lost.wait()
            if lost.is_set():
                break
            try:  # a silently dropped connection (no FIN) shows only when used
                with anyio.fail_after(_PROBE_EVERY):
                    await conn.fetchval("SELECT 1")
            except Exception as exc:
                return exc
        return ConnectionError("the connection closed")
