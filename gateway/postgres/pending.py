"""`PostgresPendingStore`: pending calls in PostgreSQL, shared by every replica.

Races, for a reviewer: every transition is one optimistic compare-and-set statement,

    UPDATE pending_calls SET ..., version = version + 1 WHERE id = $1 AND version = $2

after reading the record at ``version``. The state machine (`gateway.approvals._transitions`)
plans the new record from the one read; the ``UPDATE`` commits only if no other write came in
between (the row's ``version`` is unchanged), so of several deciders or claimers reading the
same record exactly one commits. A loser reads again and plans again, and the state machine
then refuses it (`PendingConflict`). The ``approved -> executing`` claim is such a statement,
hence one execution. Expiry is the same statement with the ``expire_if_due`` plan.

When a connection breaks while a write is in flight, whether it committed is read back: the
record at ``version + 1`` equal to the planned one means it did (the write is not repeated).
"""

from __future__ import annotations

import builtins
import contextlib
import time
from collections.abc import Callable
from typing import Any, Final, Self

import anyio
import asyncpg
from anyio.abc import TaskGroup

from gateway.approvals._query import Query
from gateway.approvals._rows import decode_record, record_of, row_of
from gateway.approvals._transitions import Plan, Step
from gateway.approvals.errors import PendingNotFound
from gateway.approvals.pending import PendingCall
from gateway.approvals.records import PendingRecords
from gateway.approvals.store import PendingListener, PendingStore
from gateway.background.health import StoreHealth
from gateway.postgres.database import Conn, Database
from gateway.postgres.notify import LIVENESS_CLASS, Notifications, new_liveness_key

__all__ = ["SAFETY_REREAD", "PostgresPendingRecords", "PostgresPendingStore"]

SAFETY_REREAD: Final = 5.0
"""Seconds between re-reads of a waited-on call; a wake-up normally comes by ``NOTIFY``."""

_COLUMNS: Final = (
    "id, kind, state, principal, session_id, tool, args_sha256, delivered,"
    " created_at, expires_at, updated_at, record"
)
_INSERT: Final = (
    f"INSERT INTO pending_calls ({_COLUMNS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)"
)
_READ: Final = "SELECT version, record FROM pending_calls WHERE id = $1"
_CAS: Final = (
    "UPDATE pending_calls SET state = $3, delivered = $4, updated_at = $5, record = $6,"
    " owner = CASE WHEN $3 = 'executing' THEN $7 ELSE owner END, version = version + 1"
    " WHERE id = $1 AND version = $2"
)
# The executing calls whose replica no longer holds its liveness lock: it died.
_ORPHANS: Final = """SELECT record FROM pending_calls p WHERE state = 'executing'
    AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid::bigint = $1 AND l.objid::bigint = p.owner AND l.objsubid = 2)
    ORDER BY created_at DESC, seq DESC"""


def _select(query: Query) -> tuple[str, builtins.list[Any]]:
    clauses: builtins.list[str] = []
    params: builtins.list[Any] = []
    if query.states is not None:
        params.append(sorted(query.states))
        clauses.append(f"state = ANY(${len(params)}::text[])")
    for column, value in query.equalities().items():
        params.append(value)
        clauses.append(f"{column} = ${len(params)}")
    if query.due_by is not None:
        params.append(query.due_by)
        clauses.append(f"expires_at <= ${len(params)}")
    if query.created_since is not None:
        params.append(query.created_since)
        clauses.append(f"created_at >= ${len(params)}")
    sql = "SELECT record FROM pending_calls"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY created_at DESC, seq DESC"
    if query.limit is not None:
        params.append(query.limit)
        sql += f" LIMIT ${len(params)}"
    return sql, params


class PostgresPendingRecords(PendingRecords):
    """Pending calls in the shared schema; see the module docstring for the compare-and-set.

    Args:
        database: The shared database (its pool is closed with these records).
        liveness_key: The key of this replica's liveness lock, recorded as the owner of each
            call it claims for execution (`orphans` are those whose owner is gone).
    """

    def __init__(self, database: Database, liveness_key: int) -> None:
        self.database = database
        self.liveness_key = liveness_key

    async def insert(self, call: PendingCall) -> None:
        tries = 0

        async def insert(conn: Conn) -> None:
            nonlocal tries
            tries += 1
            try:
                await conn.execute(_INSERT, *row_of(call, call.delivered))
            except asyncpg.UniqueViolationError:
                found = await self._read(conn, call.id)
                if tries == 1 or found is None or found[1] != call:  # else: try 1 committed
                    raise ValueError(f"Pending call {call.id!r} already exists") from None

        await self.database.run(insert)

    async def load(self, id: str) -> PendingCall | None:
        async def load(conn: Conn) -> PendingCall | None:
            found = await self._read(conn, id)
            return None if found is None else found[1]

        return await self.database.run(load)

    async def query(self, query: Query) -> builtins.list[PendingCall]:
        sql, params = _select(query)

        async def select(conn: Conn) -> builtins.list[PendingCall]:
            return [decode_record(row[0]) for row in await conn.fetch(sql, *params)]

        return await self.database.run(select)

    async def orphans(self) -> builtins.list[PendingCall]:
        async def select(conn: Conn) -> builtins.list[PendingCall]:
            return [decode_record(row[0]) for row in await conn.fetch(_ORPHANS, LIVENESS_CLASS)]

        return await self.database.run(select)

    async def update(self, id: str, plan: Plan) -> Step:
        attempt: tuple[int, PendingCall] | None = None  # a write whose commit is unknown

        async def update(conn: Conn) -> Step:
            nonlocal attempt
            while True:
                found = await self._read(conn, id)
                if found is None:
                    raise PendingNotFound(id)
                version, current = found
                if attempt is not None and attempt == (version, current):
                    return Step(current, changed=True)  # the broken attempt had committed
                step = plan(current)
                if not step.changed:
                    return step
                new = step.call
                attempt = (version + 1, new)
                args = (new.state, new.delivered, new.updated_at, record_of(new), self.liveness_key)
                if await conn.fetchval(_CAS + " RETURNING version", id, version, *args):
                    return step
                attempt = None  # lost the compare-and-set: read and plan again

        return await self.database.run(update)

    async def consume_nonce(self, nonce: str, *, expires_at: float, now: float) -> bool:
        # A connection lost after the insert committed makes the retry read as a replay: the
        # answer is refused (fails closed); a replay and that retry cannot be told apart.

        async def consume(conn: Conn) -> bool:
            async with conn.transaction():
                await conn.execute("DELETE FROM used_nonces WHERE expires_at < $1", now)
                inserted = await conn.fetchval(
                    "INSERT INTO used_nonces (nonce, expires_at) VALUES ($1, $2)"
                    " ON CONFLICT DO NOTHING RETURNING true",
                    nonce,
                    expires_at,
                )
            return bool(inserted)

        return await self.database.run(consume)

    async def close(self) -> None:
        """Close the database's pool."""
        await self.database.close()

    async def _read(self, conn: Conn, id: str) -> tuple[int, PendingCall] | None:
        row = await conn.fetchrow(_READ, id)
        return None if row is None else (int(row[0]), decode_record(row[1]))


class PostgresPendingStore(PendingStore):
    """A `PendingStore` over `PostgresPendingRecords`, shared by every replica.

    Entered (``async with``), it listens for other replicas' transitions (`Notifications`),
    so `wait` wakes the moment another replica records a decision; a slow re-read every
    `SAFETY_REREAD` seconds remains for a notification lost in an outage. Unentered it works
    too, waking only on its own transitions and the re-read.

    Args:
        database: The shared database (its pool is closed with this store).
        listener: See `PendingStore`.
        clock: See `PendingStore`.
        poll_interval: Seconds between safety re-reads in `wait`.
    """

    def __init__(
        self,
        database: Database,
        *,
        listener: PendingListener | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = SAFETY_REREAD,
    ) -> None:
        self.database = database
        self.liveness_key = new_liveness_key()
        records = PostgresPendingRecords(database, self.liveness_key)
        super().__init__(records, listener=listener, clock=clock, poll_interval=poll_interval)
        self._tg: TaskGroup | None = None

    def health(self) -> StoreHealth:
        """Whether the database can be reached (`Database.health`), for ``/healthz``."""
        return self.database.health()

    async def close(self) -> None:
        """Stop listening and close the database's pool."""
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        await super().close()

    async def __aenter__(self) -> Self:
        await self.database.pool()  # unreachable or too new: the gateway does not start
        notifications = Notifications(
            self.database,
            self.database.settings.channel,
            on_notify=self.waiters.wake,
            on_connect=self.waiters.wake_all,
            liveness_key=self.liveness_key,
        )
        tg = anyio.create_task_group()
        await tg.__aenter__()
        try:
            await tg.start(notifications.run)
        except BaseException:
            tg.cancel_scope.cancel()
            with contextlib.suppress(BaseException):
                await tg.__aexit__(None, None, None)
            raise
        self._tg = tg
        return self
