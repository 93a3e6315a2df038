"""`SQLitePendingStore`: pending calls in one SQLite file, durable across restarts and crashes."""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

import anyio.to_thread

from gateway.approvals._query import Query
from gateway.approvals._rows import decode_record, record_of, row_of
from gateway.approvals._transitions import Plan, Step
from gateway.approvals.errors import PendingNotFound, PendingStoreError
from gateway.approvals.pending import PendingCall
from gateway.approvals.records import PendingRecords
from gateway.approvals.store import PendingListener, PendingStore
from gateway.sqlite.schema import immediate, open_database

__all__ = ["SQLitePendingRecords", "SQLitePendingStore"]

T = TypeVar("T")

_INSERT: Final = (
    "INSERT INTO pending_calls (id, kind, state, principal, session_id, tool, args_sha256,"
    " delivered, created_at, expires_at, updated_at, record) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
)
_UPDATE: Final = (
    "UPDATE pending_calls SET state = ?, delivered = ?, updated_at = ?, record = ? WHERE id = ?"
)
_ORDER: Final = " ORDER BY created_at DESC, rowid DESC"


def _select(query: Query) -> tuple[str, builtins.list[Any]]:
    clauses: builtins.list[str] = []
    params: builtins.list[Any] = []
    if query.states is not None:
        clauses.append(f"state IN ({', '.join('?' * len(query.states))})")
        params.extend(sorted(query.states))
    for column, value in query.equalities().items():
        clauses.append(f"{column} = ?")
        params.append(value)
    if query.due_by is not None:
        clauses.append("expires_at <= ?")
        params.append(query.due_by)
    if query.created_since is not None:
        clauses.append("created_at >= ?")
        params.append(query.created_since)
    sql = "SELECT record FROM pending_calls"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += _ORDER
    if query.limit is not None:
        sql += " LIMIT ?"
        params.append(query.limit)
    return sql, params


class SQLitePendingRecords(PendingRecords):
    """Pending calls in a SQLite file (WAL, ``synchronous=FULL``): a write is on disk when the
    method returns, and a restart or crash loses nothing.

    One connection, guarded by a lock, used from worker threads so the event loop never waits
    on disk. The file is opened (and its schema created) on first use. Several processes may
    share the file: each write is an ``IMMEDIATE`` transaction.

    Args:
        path: The database file.

    Raises:
        PendingStoreError: (from any method) The file is not a usable store, or it is closed.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = os.fspath(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    async def insert(self, call: PendingCall) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(_INSERT, row_of(call, int(call.delivered)))
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"Pending call {call.id!r} already exists") from exc

        await self._run(insert)

    async def load(self, id: str) -> PendingCall | None:
        def load(conn: sqlite3.Connection) -> PendingCall | None:
            row = conn.execute("SELECT record FROM pending_calls WHERE id = ?", (id,)).fetchone()
            return None if row is None else decode_record(row[0])

        return await self._run(load)

    async def query(self, query: Query) -> builtins.list[PendingCall]:
        sql, params = _select(query)

        def select(conn: sqlite3.Connection) -> builtins.list[PendingCall]:
            return [decode_record(record) for (record,) in conn.execute(sql, params)]

        return await self._run(select)

    async def update(self, id: str, plan: Plan) -> Step:
        def update(conn: sqlite3.Connection) -> Step:
            # The IMMEDIATE transaction holds the write lock from the read to the write, so the
            # plan sees the state it replaces: this read-decide-write is the compare-and-set.
            with immediate(conn):
                row = conn.execute(
                    "SELECT record FROM pending_calls WHERE id = ?", (id,)
                ).fetchone()
                if row is None:
                    raise PendingNotFound(id)
                step = plan(decode_record(row[0]))
                if step.changed:
                    new = step.call
                    conn.execute(
                        _UPDATE, (new.state, int(new.delivered), new.updated_at, record_of(new), id)
                    )
            return step

        return await self._run(update)

    async def consume_nonce(self, nonce: str, *, expires_at: float, now: float) -> bool:
        def consume(conn: sqlite3.Connection) -> bool:
            with immediate(conn):
                conn.execute("DELETE FROM used_nonces WHERE expires_at < ?", (now,))
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO used_nonces (nonce, expires_at) VALUES (?, ?)",
                    (nonce, expires_at),
                )
            return cursor.rowcount == 1

        return await self._run(consume)

    async def close(self) -> None:
        """Close the database connection; later calls raise `PendingStoreError`."""

        def close() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(close)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                if self._closed:
                    raise PendingStoreError(f"Pending store {self._path!r} is closed")
                if self._conn is None:
                    self._conn = open_database(self._path)
                return work(self._conn)

        return await anyio.to_thread.run_sync(locked)


class SQLitePendingStore(PendingStore):
    """A `PendingStore` over `SQLitePendingRecords`: durable across restarts and crashes; `wait`
    polls to see the changes of other processes sharing the file.

    Args:
        path: The database file.
        listener: See `PendingStore`.
        clock: See `PendingStore`.
        poll_interval: See `PendingStore`.

    Raises:
        PendingStoreError: (from any method) The file is not a usable store, or it is closed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        listener: PendingListener | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.5,
    ) -> None:
        records = SQLitePendingRecords(path)
        super().__init__(records, listener=listener, clock=clock, poll_interval=poll_interval)
