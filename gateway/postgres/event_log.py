"""The cluster's event stream: each replica appends its events to one shared log and reads
every replica's events back, in one order, into a bus of its own.

`EventLog` runs two tasks for the life of its ``async with`` block:

- the writer reads the replica's own bus and appends its events in batches (one statement
  each, see `gateway.postgres.event_tables` for why rows commit in ``seq`` order), then
  ``NOTIFY``s; a batch the database refused is held and tried again until it is written
  (bounded; what is dropped is logged with a count). The append answers with the rows this
  replica has not read yet, the other replicas' before its own, and the writer publishes
  them: a busy replica reads as it appends;
- the reader, told by a notification that another replica appended (or by a reconnect),
  waits `_LINGER` for the writer to bring those rows, then reads what is still missing,
  trying again until it could (`gateway.background.resilient`: neither task ends in an
  outage, and after one the reader reads from the table what the lost notifications announced).

Both publish, in ``seq`` order, every row not published yet into `EventLog.feed`, a separate
`EventBus` whose ring holds the last events of the whole cluster. A replica takes its own
rows back as the events it wrote (the same instances; only other replicas' bodies are read
and parsed). At start it preloads that ring from the table, so a client resuming with
``Last-Event-ID`` on any replica gets the same replay. An event reaches the other replicas'
feeds within about two `_LINGER`s.

The feed is what SSE subscribers and webhooks read. The table keeps the last ``keep`` events.
Appends commit without waiting for the WAL flush (the audit chain, not this stream, is the
durable record; see `gateway.postgres.event_tables`).
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Iterable
from types import TracebackType
from typing import Final, Self, TypeAlias

import anyio
from anyio.abc import TaskStatus

from gateway.background.resilient import until_done
from gateway.events.bus import EventBus, Subscription
from gateway.events.model import CONTROL_TYPES, Event
from gateway.postgres.database import Conn, Database
from gateway.postgres.notify import Notifications, new_liveness_key

__all__ = ["EventLog"]

log = logging.getLogger("lockgate.postgres")

_LINGER: Final = 0.02
"""Seconds an event waits for others to share its append, and a notification for the writer's
next append to bring the rows it announces (before the reader reads them)."""
_BATCH: Final = 500
_HELD_MAX: Final = 10_000
_TRIM_EVERY: Final = 1000


_READ: Final = """SELECT seq, id, CASE WHEN replica <> $3 THEN body::text END FROM events
    WHERE seq > $1 ORDER BY seq LIMIT $2"""
"""The rows after ``$1``; the bodies of other replicas' only (``$3``: this replica)."""
_APPEND: Final = """SELECT row_seq, row_id, row_body
    FROM append_events($1::text[], $2, $3::json[], $4, $5, $6, $7)"""
Row: TypeAlias = tuple[int, str, str | None]
"""``(seq, id, body)``; no body for this replica's rows."""


class EventLog:
    """Appends ``bus`` events to the shared log and feeds every replica's events to `feed`.

    Args:
        database: The shared database.
        bus: This replica's bus (its own events).
        replica: This replica's name, recorded on its rows.
        ring_size: Events kept in the feed's replay ring (and preloaded at start).
        keep: Events kept in the table.
    """

    def __init__(
        self,
        database: Database,
        bus: EventBus,
        *,
        replica: str,
        ring_size: int = 1024,
        keep: int = 100_000,
    ) -> None:
        self._database, self._bus, self._replica = database, bus, replica
        self._keep, self._ring_size = keep, ring_size
        self.feed = EventBus(bus.source, ring_size=ring_size)
        self._channel = f"{database.settings.schema}_events"
        self._tag = secrets.token_hex(8)  # names this log's appends in notifications
        self._last = 0
        self._announced = 0  # the last seq another replica's notification announced
        self._reread = False  # read whatever there is (after a reconnect, or a long answer)
        self._wake = anyio.Event()
        self._held: list[Event] = []
        self._mine: dict[str, Event] = {}  # appended (or being appended), not read back yet
        self._dropped = 0
        self._written = 0
        self._group: anyio.abc.TaskGroup | None = None
        self._subscription: Subscription | None = None

    async def __aenter__(self) -> Self:
        self._last = await self._preload()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        try:
            notifications = Notifications(
                self._database,
                self._channel,
                on_notify=self._notified,
                on_connect=self._read_all,
                liveness_key=new_liveness_key(),
            )
            await group.start(notifications.run)
            await group.start(self._write)
            group.start_soon(self._read)
        except BaseException:
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        with anyio.move_on_after(2, shield=True):
            await self._flush()
        group.cancel_scope.cancel()
        await group.__aexit__(None, None, None)
        self.feed.close()

    async def _preload(self) -> int:
        """Publish the newest ``ring_size`` rows into the feed's ring; the last ``seq``."""

        async def work(conn: Conn) -> list[tuple[int, str]]:
            rows = await conn.fetch(
                "SELECT seq, body::text FROM events ORDER BY seq DESC LIMIT $1", self._ring_size
            )
            return [(int(r[0]), str(r[1])) for r in reversed(rows)]

        rows = await self._database.run(work)
        for _seq, body in rows:
            self.feed.publish(_event(body))
        return rows[-1][0] if rows else 0

    # -- writer ---------------------------------------------------------------------------

    async def _write(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._bus.subscribe(("*",), name="event-log", buffer=_HELD_MAX) as sub:
            self._subscription = sub
            task_status.started()
            async for event in sub:
                self._hold([event])
                await anyio.sleep(_LINGER)  # others join the batch: one statement for all
                await until_done(self._flush, what="event log: appending", logger=log)

    async def _flush(self) -> None:
        """Append what is held (and what the subscription has buffered) in one transaction."""
        self._hold(self._subscription.ready(_BATCH) if self._subscription is not None else [])
        if len(self._held) > _HELD_MAX:
            excess = len(self._held) - _HELD_MAX
            for event in self._held[:excess]:
                self._mine.pop(event.id, None)
            del self._held[:excess]
            self._dropped += excess
            log.error("event log: %d events dropped while the database was away", excess)
        while self._held:
            batch = self._held[:_BATCH]
            rows = await self._database.run(functools.partial(self._append, batch=batch))
            del self._held[: len(batch)]
            await self._publish(rows)
            if len(rows) == _BATCH:  # more than one answer holds: the reader reads the rest
                self._read_all()
            self._written += len(batch)
            if self._written >= _TRIM_EVERY:
                self._written = 0
                await self._database.run(self._trim)

    def _hold(self, events: Iterable[Event]) -> None:
        for event in events:
            if event.type not in CONTROL_TYPES:
                self._held.append(event)
                self._mine[event.id] = event

    async def _append(self, conn: Conn, *, batch: list[Event]) -> list[Row]:
        # A batch tried again after a lost connection may have committed: ids are unique.
        rows = await conn.fetch(
            _APPEND,
            [e.id for e in batch],
            self._replica,
            [e.json_bytes.decode() for e in batch],
            self._channel,
            self._tag,
            self._last,
            _BATCH,
        )
        return [(int(r[0]), str(r[1]), r[2]) for r in rows]

    async def _trim(self, conn: Conn) -> None:
        await conn.execute(
            "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM events) - $1", self._keep
        )

    # -- reader ---------------------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            await anyio.sleep(_LINGER)  # the writer's next append may bring the rows
            if not self._reread and self._announced <= self._last:
                continue
            self._reread = False
            await until_done(self._read_rest, what="event log: reading", logger=log)

    async def _read_rest(self) -> None:
        while await self._read_some():
            pass

    def _notified(self, payload: str) -> None:
        """Rows up to ``seq`` N were appended (``payload``: ``"N tag"``): read them unless this
        log appended them (its writer took them) or published them already."""
        last, _, tag = payload.partition(" ")
        if tag == self._tag:
            return
        if not last.isdigit():
            self._read_all()
        elif int(last) > self._last:
            self._announced = max(self._announced, int(last))
            self._wake.set()

    def _read_all(self) -> None:
        self._reread = True
        self._wake.set()

    async def _read_some(self) -> bool:
        """Publish the next rows after the last one seen; False when there were none."""

        async def work(conn: Conn) -> list[Row]:
            rows = await conn.fetch(_READ, self._last, _BATCH, self._replica)
            return [(int(r[0]), str(r[1]), r[2]) for r in rows]

        rows = await self._database.run(work)
        await self._publish(rows)
        return len(rows) == _BATCH

    async def _publish(self, rows: list[Row]) -> None:
        """Publish ``rows`` (in ``seq`` order) past the last one published: the writer and the
        reader both do, so each skips what the other published meanwhile."""
        own = [key for seq, key, body in rows if body is None and seq > self._last]
        unheld = [key for key in own if key not in self._mine]
        bodies = await self._database.run(functools.partial(_bodies, ids=unheld)) if unheld else {}
        for seq, key, body in rows:
            if seq <= self._last:
                continue
            # A row of this replica (no body read) is the event it wrote.
            event = (self._mine.pop(key, None) or bodies.get(key)) if body is None else _event(body)
            if event is not None:
                self.feed.publish(event)
            self._last = seq


async def _bodies(conn: Conn, *, ids: list[str]) -> dict[str, Event]:
    """The events of rows of this replica's name that it does not hold (never expected)."""
    found = await conn.fetch("SELECT id, body::text FROM events WHERE id = ANY($1)", ids)
    return {str(row[0]): _event(str(row[1])) for row in found}


def _event(body: str) -> Event:
    return Event.from_cloudevent(json.loads(body))
