"""`PostgresAuditLog`: one hash-chained audit log shared by every replica.

An append is one statement (``append_audit``, see `gateway.postgres.event_tables`): it locks
the head row (``audit_head``, ``FOR UPDATE``), chains the new entries from the head's hash,
inserts them and moves the head. The client serialises each entry's record around its ``seq``
(`_parts`), so the server only splices in the ``seq`` and hashes. When one of the events is
logged already (an append whose answer was lost), the statement breaks ``event_id``'s
uniqueness and writes nothing; the append is then one transaction here: lock the head, skip
what is logged, chain and insert the rest. The row lock is the chain's only
serialisation point; it is held for one batch, and batches come from the replicas' audit
sinks, off the call path (decisions that must be on record first are single small batches:
see `gateway.audit.sink.AuditSink.write_through`).

Entries are the embedded log's (`gateway.audit.log`), hashed the same way, so
`lockgate audit verify` checks either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

import asyncpg

from gateway.audit.log import (
    COLUMNS,
    AuditEntry,
    chained_entry,
    entry_of,
    entry_time,
    event_row,
)
from gateway.audit.verify import VerifyReport, verify_rows
from gateway.events.model import Event
from gateway.postgres.database import Conn, Database
from toolsets.canonical import canonical_json

__all__ = ["PostgresAuditLog", "verify_database"]

_APPEND: Final = """SELECT head_seq, head_hash, hashes FROM append_audit($1,
    $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
    $9::text[], $10::text[])"""
_SEQ: Final = -7_777_777_777_777_777
"""Stands for the ``seq`` while a record is serialised (`_parts`)."""
_SEQ_KEY: Final = b'"seq":%d' % _SEQ
_HEAD: Final = """SELECT seq, hash,
        set_config('synchronous_commit',
            CASE WHEN $1 THEN current_setting('synchronous_commit') ELSE 'off' END, true),
        EXISTS (SELECT FROM unnest($2::text[]) AS i (id) JOIN audit ON event_id = i.id) AS logged
    FROM audit_head WHERE one = 1 FOR UPDATE"""
"""The head, locked; without ``$1`` (durable) the commit does not wait for the WAL flush; and
whether one of the events ``$2`` is logged already (an append whose answer was lost): one
index lookup per id (``event_id = ANY($2)`` under EXISTS may scan the whole table)."""
_INSERT: Final = f"""WITH added AS (INSERT INTO audit ({COLUMNS}) SELECT * FROM unnest(
        $1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
        $8::text[], $9::text[], $10::text[]))
    UPDATE audit_head SET seq = $11, hash = $12 WHERE one = 1"""


class PostgresAuditLog:
    """The shared audit log (the same interface as `gateway.audit.log.AuditLog`).

    Args:
        database: The shared database (its pool is owned elsewhere).
    """

    def __init__(self, database: Database) -> None:
        self._database = database

    @property
    def path(self) -> str:
        """Where the log is, for messages."""
        return f"the audit table of {self._database.settings.where}"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def append_events(
        self, events: Sequence[Event], *, durable: bool = True
    ) -> list[AuditEntry]:
        """Append ``events`` in one transaction, each once.

        Args:
            events: What to append.
            durable: Wait for the commit to be flushed (``synchronous_commit``); without it
                the batch is visible at once and durable a moment later.
        """
        rows = [event_row(event) for event in events]

        async def work(conn: Conn) -> list[AuditEntry]:
            chained = await _append_chained(conn, rows, durable)
            return chained if chained is not None else await _append_rows(conn, rows, durable)

        return await self._database.run(work)

    async def append_event(self, event: Event) -> AuditEntry:
        """Append ``event`` (its CloudEvent envelope as the body), once per event id."""
        return (await self.append_events([event]))[0]

    async def tail(self, n: int = 20) -> list[AuditEntry]:
        """The last ``n`` entries, oldest first."""

        async def work(conn: Conn) -> list[AuditEntry]:
            rows = await conn.fetch(f"SELECT {COLUMNS} FROM audit ORDER BY seq DESC LIMIT $1", n)
            return [entry_of(tuple(row)) for row in reversed(rows)]

        return await self._database.run(work)

    async def entries(self, kinds: Iterable[str] = ()) -> list[AuditEntry]:
        """Every entry in chain order (only those of ``kinds`` when given)."""
        wanted = list(kinds)

        async def work(conn: Conn) -> list[AuditEntry]:
            where = " WHERE kind = ANY($1)" if wanted else ""
            query = f"SELECT {COLUMNS} FROM audit{where} ORDER BY seq"
            rows = await (conn.fetch(query, wanted) if wanted else conn.fetch(query))
            return [entry_of(tuple(row)) for row in rows]

        return await self._database.run(work)

    async def verify(self) -> VerifyReport:
        """The shared chain recomputed (`verify_database`)."""
        return await verify_database(self._database)


async def _append_chained(
    conn: Conn, rows: Sequence[dict[str, Any]], durable: bool
) -> list[AuditEntry] | None:
    """Append ``rows`` in one statement; None (nothing written) when one is logged already."""
    ts = entry_time()
    parts = [_parts(row, ts) for row in rows]
    columns = [[row[key] for row in rows] for key in ("kind", "call_id", "principal", "tool")]
    events, pieces = [row["event_id"] for row in rows], map(list, zip(*parts, strict=True))
    try:
        found = await conn.fetchrow(_APPEND, durable, [ts] * len(rows), *columns, events, *pieces)
    except asyncpg.UniqueViolationError:  # an event is logged already: the statement wrote nothing
        return None
    assert found is not None  # a function with OUT parameters returns one row
    seq, prev_hash = int(found["head_seq"]), str(found["head_hash"])
    entries: list[AuditEntry] = []
    for row, digest in zip(rows, found["hashes"], strict=True):
        seq += 1
        entries.append(AuditEntry(seq=seq, ts=ts, **row, prev_hash=prev_hash, hash=digest))
        prev_hash = digest
    return entries


def _parts(row: dict[str, Any], ts: str) -> tuple[str, str, str]:
    """The body's canonical JSON, and what the record's canonical JSON has between the body
    and the ``seq`` and after it (see `gateway.audit.log.chained_entry`)."""
    body = canonical_json(row["body"])
    rest = canonical_json({"seq": _SEQ, "ts": ts} | {k: v for k, v in row.items() if k != "body"})
    before, after = rest[1:].split(_SEQ_KEY)  # strings escape '"': the key occurs once
    return body.decode(), "," + before.decode() + '"seq":', after.decode()


async def _append_rows(
    conn: Conn, rows: Sequence[dict[str, Any]], durable: bool
) -> list[AuditEntry]:
    # Four round trips: begin, lock the head (and count what is logged already), insert every
    # entry and move the head in one statement, commit.
    ids = [row["event_id"] for row in rows if row["event_id"]]
    async with conn.transaction():
        head = await conn.fetchrow(_HEAD, durable, ids)
        assert head is not None  # created with the table
        seq, prev_hash = int(head["seq"]), str(head["hash"])
        logged = await _logged(conn, ids) if head["logged"] else {}
        entries: list[AuditEntry] = []
        values: list[tuple[Any, ...]] = []
        for row in rows:
            if (existing := logged.get(row["event_id"])) is not None:
                entries.append(existing)
                continue
            seq += 1
            entry, body = chained_entry(seq, prev_hash, row)
            values.append((seq, entry.ts, *list(row.values())[:5], body, prev_hash, entry.hash))
            entries.append(entry)
            prev_hash = entry.hash
        if values:
            await conn.execute(_INSERT, *map(list, zip(*values, strict=True)), seq, prev_hash)
    return entries


async def _logged(conn: Conn, event_ids: list[str]) -> Mapping[str, AuditEntry]:
    rows = await conn.fetch(f"SELECT {COLUMNS} FROM audit WHERE event_id = ANY($1)", event_ids)
    return {row["event_id"]: entry_of(tuple(row)) for row in rows}


async def verify_database(database: Database) -> VerifyReport:
    """Recompute the shared chain and compare its end with ``audit_head``."""

    async def work(conn: Conn) -> tuple[list[tuple[Any, ...]], tuple[int, str]]:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            rows = await conn.fetch(f"SELECT {COLUMNS} FROM audit ORDER BY seq")
            head = await conn.fetchrow("SELECT seq, hash FROM audit_head WHERE one = 1")
        assert head is not None
        return [tuple(row) for row in rows], (int(head["seq"]), str(head["hash"]))

    rows, head = await database.run(work)
    return verify_rows(rows, head=head)
