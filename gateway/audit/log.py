"""The audit log: an append-only, hash-chained SQLite table of decisions and outcomes.

Each entry's ``hash`` is SHA-256 over its predecessor's hash followed by the canonical JSON of the
entry (``seq``, ``ts``, ``kind``, ``call_id``, ``principal``, ``tool``, ``event_id``, ``body``), so
changing, deleting or reordering entries breaks the chain at that point; `verify`
(`gateway.audit.verify`) finds where, and the head anchor kept beside the log catches
entries removed from the end.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import anyio
import anyio.to_thread

from gateway.events.model import Event
from toolsets.canonical import canonical_json
from toolsets.errors import AuditUnavailable

__all__ = [
    "COLUMNS",
    "GENESIS",
    "AuditEntry",
    "AuditLog",
    "anchor_path",
    "chain_hash",
    "chained_entry",
    "entry_of",
    "entry_time",
    "event_row",
    "open_reader",
    "read_entries",
    "read_tail",
]

logger = logging.getLogger(__name__)

GENESIS: Final = "0" * 64
"""The ``prev_hash`` of the first entry."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    call_id TEXT,
    principal TEXT,
    tool TEXT,
    event_id TEXT UNIQUE,
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
)
"""
COLUMNS = "seq, ts, kind, call_id, principal, tool, event_id, body, prev_hash, hash"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One audit entry (see the module docstring for what ``hash`` covers)."""

    seq: int
    ts: str
    kind: str
    call_id: str | None
    principal: str | None
    tool: str | None
    event_id: str | None
    body: Any
    prev_hash: str
    hash: str

    def record(self) -> dict[str, Any]:
        """The hashed part of the entry."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "kind": self.kind,
            "call_id": self.call_id,
            "principal": self.principal,
            "tool": self.tool,
            "event_id": self.event_id,
            "body": self.body,
        }

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON object (for ``lockgate audit tail --json``)."""
        return self.record() | {"prev_hash": self.prev_hash, "hash": self.hash}


def chain_hash(prev_hash: str, record: Mapping[str, Any]) -> str:
    """The hash of an entry whose hashed part is ``record``."""
    return hashlib.sha256(prev_hash.encode() + canonical_json(record)).hexdigest()


class AuditLog:
    """Appends entries to the audit table at ``path`` (created with its folder when missing).

    Writes are durable when `append` returns (WAL, ``synchronous=FULL``) and run in a worker thread
    under one lock; each append reads the head inside an immediate transaction, so several
    processes sharing the file still build one chain.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = anyio.Lock()

    async def __aenter__(self) -> Self:
        try:
            self._conn = await anyio.to_thread.run_sync(_open_writer, self.path)
        except (OSError, sqlite3.Error) as exc:
            raise AuditUnavailable(
                f"cannot open the audit log at {self.path} ({exc}): check events.audit.path "
                "(a writable file), or set events.audit.enabled: false"
            ) from None
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close)

    async def append(
        self,
        kind: str,
        body: Mapping[str, Any],
        *,
        call_id: str | None = None,
        principal: str | None = None,
        tool: str | None = None,
        event_id: str | None = None,
    ) -> AuditEntry:
        """Append one entry and return it once it is on disk.

        An entry with an ``event_id`` already logged is not written twice; the existing one is
        returned (so the gateway may log an event itself and also let `AuditSink` see it).
        ``body`` must be JSON-compatible.

        Raises:
            sqlite3.Error: the entry could not be written (fail closed on this).
            TypeError, ValueError: ``body`` is not JSON-compatible.
        """
        if self._conn is None:
            raise RuntimeError("AuditLog used outside its `async with` block")
        header = {"kind": kind, "call_id": call_id, "principal": principal, "tool": tool}
        row = header | {"event_id": event_id, "body": body}
        async with self._lock:
            return await anyio.to_thread.run_sync(_append, self._conn, row)

    async def append_events(
        self, events: Sequence[Event], *, durable: bool = True
    ) -> list[AuditEntry]:
        """Append ``events`` in one transaction (one thread hop), each once.

        Args:
            events: What to append.
            durable: fsync before returning. Without it the batch survives a crash of the
                process (WAL) and reaches the disk with the next durable write or checkpoint;
                the background sink uses that for plain call events.
        """
        if self._conn is None:
            raise RuntimeError("AuditLog used outside its `async with` block")
        rows = [event_row(event) for event in events]
        async with self._lock:
            return await anyio.to_thread.run_sync(_append_rows, self._conn, rows, durable)

    async def append_event(self, event: Event) -> AuditEntry:
        """Append ``event`` (its CloudEvent envelope as the body), once per event id."""
        data = event.data
        return await self.append(
            event.type,
            event.to_cloudevent(),
            call_id=data.get("call_id"),
            principal=data.get("principal"),
            tool=data.get("tool"),
            event_id=event.id,
        )

    async def tail(self, n: int = 20) -> list[AuditEntry]:
        """The last ``n`` entries, oldest first."""
        if self._conn is None:
            raise RuntimeError("AuditLog used outside its `async with` block")
        async with self._lock:
            return await anyio.to_thread.run_sync(_tail, self._conn, n)


def _open_writer(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(_SCHEMA)
    return conn


def event_row(event: Event) -> dict[str, Any]:
    """The audit columns of ``event`` (its CloudEvent envelope as the body), before chaining."""
    data = event.data
    header = {
        "kind": event.type,
        "call_id": data.get("call_id"),
        "principal": data.get("principal"),
    }
    return header | {"tool": data.get("tool"), "event_id": event.id, "body": event.to_cloudevent()}


def _append(conn: sqlite3.Connection, row: dict[str, Any]) -> AuditEntry:
    return _append_rows(conn, [row])[0]


def _logged(conn: sqlite3.Connection, event_ids: Sequence[str]) -> dict[str, AuditEntry]:
    """The entries already logged for ``event_ids`` (one query per 500 ids), by event id."""
    found: dict[str, AuditEntry] = {}
    for start in range(0, len(event_ids), 500):
        chunk = event_ids[start : start + 500]
        query = f"SELECT {COLUMNS} FROM audit WHERE event_id IN ({', '.join('?' * len(chunk))})"
        for row in conn.execute(query, chunk):
            found[row[6]] = entry_of(row)
    return found


def _synchronous(conn: sqlite3.Connection, durable: bool) -> None:
    """FULL (fsync at commit) for durable writes, NORMAL otherwise; set only when it changes."""
    mode = 2 if durable else 1
    if conn.execute("PRAGMA synchronous").fetchone()[0] != mode:
        conn.execute(f"PRAGMA synchronous={mode}")


def _append_rows(
    conn: sqlite3.Connection, rows: Sequence[dict[str, Any]], durable: bool = True
) -> list[AuditEntry]:
    """Append ``rows`` in one transaction: at most one fsync however many there are, one query
    for the event ids already logged, one statement for the inserts."""
    _synchronous(conn, durable)
    conn.execute("BEGIN IMMEDIATE")
    entries: list[AuditEntry] = []
    try:
        head = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev_hash = (head[0], head[1]) if head else (0, GENESIS)
        logged = _logged(conn, [row["event_id"] for row in rows if row["event_id"] is not None])
        values: list[tuple[Any, ...]] = []
        for row in rows:
            event_id = row["event_id"]
            if event_id is not None and (existing := logged.get(event_id)) is not None:
                entries.append(existing)
                continue
            seq += 1
            entry, body = chained_entry(seq, prev_hash, row)
            values.append((seq, entry.ts, *list(row.values())[:5], body, prev_hash, entry.hash))
            entries.append(entry)
            prev_hash = entry.hash
            if event_id is not None:  # the same event twice in one batch is logged once
                logged[event_id] = entry
        conn.executemany(f"INSERT INTO audit ({COLUMNS}) VALUES ({', '.join('?' * 10)})", values)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back itself (disk full): keep its error
            conn.execute("ROLLBACK")
        raise
    if values:  # something was appended: move the anchor
        _write_anchor(conn, seq, prev_hash, durable)
    return entries


def anchor_path(path: str | Path) -> Path:
    """Where the head of the chain is anchored: ``<log>.head`` beside the log."""
    return Path(f"{path}.head")


def _write_anchor(conn: sqlite3.Connection, seq: int, hash_: str, durable: bool) -> None:
    """Record the chain's head outside the table, so deleting its last entries shows."""
    database = conn.execute("PRAGMA database_list").fetchone()[2]
    target = anchor_path(database)
    scratch = target.with_suffix(".head.tmp")
    with open(scratch, "w", encoding="utf-8") as out:
        json.dump({"seq": seq, "hash": hash_}, out)
        if durable:
            out.flush()
            os.fsync(out.fileno())
    os.replace(scratch, target)


def entry_time() -> str:
    """The ``ts`` of an entry made now: RFC 3339 UTC with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def chained_entry(seq: int, prev_hash: str, row: dict[str, Any]) -> tuple[AuditEntry, str]:
    """The entry for ``row`` and its body's canonical JSON, serialised once.

    The hash is `chain_hash` of the record; since "body" sorts first among its keys, the
    record's canonical JSON is the body's JSON spliced before the other fields'.
    """
    record: dict[str, Any] = {"seq": seq, "ts": entry_time()} | row
    body = canonical_json(row["body"])
    rest = canonical_json({k: v for k, v in record.items() if k != "body"})
    digest = hashlib.sha256(prev_hash.encode() + b'{"body":' + body + b"," + rest[1:])
    return AuditEntry(**record, prev_hash=prev_hash, hash=digest.hexdigest()), body.decode()


def entry_of(row: tuple[Any, ...]) -> AuditEntry:
    seq, ts, kind, call_id, principal, tool, event_id, body, prev_hash, hash_ = row
    return AuditEntry(
        seq=seq,
        ts=ts,
        kind=kind,
        call_id=call_id,
        principal=principal,
        tool=tool,
        event_id=event_id,
        body=json.loads(body),
        prev_hash=prev_hash,
        hash=hash_,
    )


def _tail(conn: sqlite3.Connection, n: int) -> list[AuditEntry]:
    rows = conn.execute(f"SELECT {COLUMNS} FROM audit ORDER BY seq DESC LIMIT ?", (n,))
    return [entry_of(row) for row in reversed(rows.fetchall())]


def open_reader(path: str | Path) -> sqlite3.Connection:
    """Open an existing audit log read-only.

    Raises:
        FileNotFoundError: there is no file at ``path``.
        sqlite3.DatabaseError: the file is not an audit log.
    """
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise FileNotFoundError(f"no audit log at {str(path)!r}")
    conn = sqlite3.connect(f"{resolved.as_uri()}?mode=ro", uri=True)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'audit'").fetchone() is None:
        conn.close()
        raise sqlite3.DatabaseError(f"{str(path)!r} has no audit table")
    return conn


def read_tail(path: str | Path, n: int = 20) -> list[AuditEntry]:
    """The last ``n`` entries of the audit log at ``path``, oldest first (read-only)."""
    conn = open_reader(path)
    try:
        return _tail(conn, n)
    finally:
        conn.close()


def read_entries(path: str | Path, kinds: Collection[str] = ()) -> Iterator[AuditEntry]:
    """The entries of the audit log at ``path`` in chain order, read-only and streamed; only
    those of ``kinds`` when given.

    Raises:
        FileNotFoundError: there is no file at ``path``.
        sqlite3.DatabaseError: the file is not an audit log.
    """
    conn = open_reader(path)
    where = f" WHERE kind IN ({', '.join('?' * len(kinds))})" if kinds else ""
    try:
        rows = conn.execute(f"SELECT {COLUMNS} FROM audit{where} ORDER BY seq", tuple(kinds))
        for row in rows:
            yield entry_of(row)
    finally:
        conn.close()
