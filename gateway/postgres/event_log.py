"""The cluster's event stream: each replica appends its events to one shared log and reads
every replica's events back, in one order, into a bus of its own.

`EventLog` runs two tasks for the life of its ``async with`` block:

- the writer reads the replica's own bus and appends its events in batches (one transaction
  each, see `gateway.postgres.event_tables` for why rows commit in ``seq`` order), then
  ``NOTIFY``s; a batch the database refused is held and tried again (bounded; what is dropped
  is logged with a count);
- the reader waits for a notification (or a reconnect) and publishes, in ``seq`` order, every
  row it has not published yet into `EventLog.feed`, a separate `EventBus` whose ring holds
  the last events of the whole cluster. Its own rows it takes back as the events it wrote
  (the same instances; only other replicas' bodies are read and parsed). At start it
  preloads that ring from the table, so a client resuming with ``Last-Event-ID`` on any
  replica gets the same replay.

The feed is what SSE subscribers and webhooks read. The table keeps the last ``keep`` events.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable
from types import TracebackType
from typing import Final, Self

import anyio
from anyio.abc import TaskStatus

from gateway.events.bus import EventBus, Subscription
from gateway.events.model import CONTROL_TYPES, Event
from gateway.postgres.database import Conn, Database
from gateway.postgres.notify import Notifications, new_liveness_key
from toolsets.errors import StoreUnavailable

__all__ = ["EventLog"]

log = logging.getLogger("lockgate.postgres")

_LINGER: Final = 0.02
"""Seconds an event waits for others to share its append (and its round trip, and the other
replicas' reads): what the cluster's stream lags behind a replica's own bus, at most."""
_BATCH: Final = 500
_HELD_MAX: Final = 10_000
_TRIM_EVERY: Final = 1000
_RETRY_MAX: Final = 5.0


_READ: Final = """SELECT seq, id, CASE WHEN replica <> $3 THEN body::text END FROM events
    WHERE seq > $1 ORDER BY seq LIMIT $2"""
"""The rows after ``$1``; the bodies of other replicas' only (``$3``: this replica)."""


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
        self._last = 0
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
                on_connect=self._wake.set,
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
                await self._flush_retrying()

    async def _flush_retrying(self) -> None:
        pause = 0.1
        while True:
            try:
                await self._flush()
                return
            except StoreUnavailable as exc:
                log.error("event log not written (%s); %d events held", exc, len(self._held))
                await anyio.sleep(pause)
                pause = min(pause * 2, _RETRY_MAX)

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
            appended = await self._database.run(functools.partial(self._append, batch=batch))
            del self._held[: len(batch)]
            self._publish_own(*appended)
            self._written += len(batch)
            if self._written >= _TRIM_EVERY:
                self._written = 0
                await self._database.run(self._trim)

    def _hold(self, events: Iterable[Event]) -> None:
        for event in events:
            if event.type not in CONTROL_TYPES:
                self._held.append(event)
                self._mine[event.id] = event

    async def _append(self, conn: Conn, *, batch: list[Event]) -> tuple[int, int, list[str]]:
        # A batch tried again after a lost connection may have committed: ids are unique.
        row = await conn.fetchrow(
            "SELECT before, after, added FROM append_events($1::text[], $2, $3::jsonb[], $4)",
            [e.id for e in batch],
            self._replica,
            [e.json_bytes.decode() for e in batch],
            self._channel,
        )
        assert row is not None  # a function with OUT parameters returns one row
        return int(row[0]), int(row[1]), list(row[2])

    def _publish_own(self, before: int, after: int, added: list[str]) -> None:
        """Publish the rows just appended (``added``, in ``seq`` order) when the feed holds
        everything up to ``before``: no other replica's row is between, nothing to read. Else
        the reader publishes them with the rows before them (its notification wakes it)."""
        if before != self._last:
            return
        for key in added:
            event = self._mine.pop(key, None)
            if event is not None:
                self.feed.publish(event)
        self._last = after

    async def _trim(self, conn: Conn) -> None:
        await conn.execute(
            "DELETE FROM events WHERE seq <= (SELECT max(seq) FROM events) - $1", self._keep
        )

    # -- reader ---------------------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            try:
                while await self._read_some():
                    pass
            except StoreUnavailable as exc:
                log.warning("event log not read (%s); waiting for the database", exc)

    def _notified(self, payload: str) -> None:
        """A replica appended rows up to ``seq`` ``payload``: read unless published already."""
        try:
            if int(payload) <= self._last:
                return
        except ValueError:
            pass
        self._wake.set()

    async def _read_some(self) -> bool:
        """Publish the next rows after the last one seen; False when there were none."""

        async def work(conn: Conn) -> list[tuple[int, str, str | None]]:
            rows = await conn.fetch(_READ, self._last, _BATCH, self._replica)
            return [(int(r[0]), str(r[1]), r[2]) for r in rows]

        rows = await self._database.run(work)
        own = [key for seq, key, body in rows if body is None and seq > self._last]
        unheld = [key for key in own if key not in self._mine]
        bodies = await self._database.run(functools.partial(_bodies, ids=unheld)) if unheld else {}
        for seq, key, body in rows:
            if seq <= self._last:  # the writer published it meanwhile
                continue
            # A row of this replica (no body read) is the event it wrote.
            event = (self._mine.pop(key, None) or bodies.get(key)) if body is None else _event(body)
            if event is not None:
                self.feed.publish(event)
            self._last = seq
        return len(rows) == _BATCH


async def _bodies(conn: Conn, *, ids: list[str]) -> dict[str, Event]:
    """The events of rows of this replica's name that it does not hold (never expected)."""
    found = await conn.fetch("SELECT id, body::text FROM events WHERE id = ANY($1)", ids)
    return {str(row[0]): _event(str(row[1])) for row in found}


def _event(body: str) -> Event:
    return Event.from_cloudevent(json.loads(body))
