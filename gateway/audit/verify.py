"""Verifying the audit log: the chain recomputed entry by entry, then compared with its head
anchor."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.audit.log import COLUMNS, GENESIS, anchor_path, chain_hash, entry_of, open_reader

__all__ = ["VerifyReport", "verify", "verify_rows"]


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What `verify` found.

    Attributes:
        ok: True when the whole chain recomputes.
        entries: Entries read.
        first_bad_seq: The first entry that is missing, changed or out of place.
        problem: What is wrong with it.
        head_hash: Hash of the last good entry (anchor it elsewhere to detect truncation).
    """

    ok: bool
    entries: int
    first_bad_seq: int | None = None
    problem: str | None = None
    head_hash: str = GENESIS


def verify(path: str | Path) -> VerifyReport:
    """Recompute the chain of the audit log at ``path`` and report the first bad entry.

    Raises:
        FileNotFoundError: there is no file at ``path``.
        sqlite3.DatabaseError: the file is not an audit log.
    """
    conn = open_reader(path)
    try:
        report = verify_rows(conn.execute(f"SELECT {COLUMNS} FROM audit ORDER BY seq"))
    finally:
        conn.close()
    if not report.ok:
        return report
    problem = _against_anchor(path, report.entries)
    if problem is not None:
        return VerifyReport(False, report.entries, problem[0], problem[1], report.head_hash)
    return report


def verify_rows(
    rows: Iterable[Sequence[Any]], *, head: tuple[int, str] | None = None
) -> VerifyReport:
    """Recompute the chain of ``rows`` (audit columns, in ``seq`` order); when ``head`` (the
    recorded ``(seq, hash)`` of the newest entry) is given, the chain must end there."""
    expected, prev_hash, count = 1, GENESIS, 0
    for row in rows:
        count += 1
        problem = _check(row, expected, prev_hash)
        if problem is not None:
            return VerifyReport(False, count, problem[0], problem[1], prev_hash)
        expected, prev_hash = row[0] + 1, row[9]
    last = expected - 1
    if head is not None and head[0] > last:
        problem_text = f"entries {last + 1} to {head[0]} are missing (the head records {head[0]})"
        return VerifyReport(False, count, last + 1, problem_text, prev_hash)
    if head is not None and (head[0] < last or head[1] != prev_hash):
        return VerifyReport(False, count, last, f"entry {last} differs from the head", prev_hash)
    return VerifyReport(True, count, head_hash=prev_hash)


def _against_anchor(path: str | Path, last: int) -> tuple[int, str] | None:
    """Compare the chain with its anchored head: the table may have lost its tail."""
    try:
        anchor = json.loads(anchor_path(path).read_text(encoding="utf-8"))
        seq, hash_ = int(anchor["seq"]), str(anchor["hash"])
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        return last + 1, "the head anchor is unreadable"
    if seq > last:
        return last + 1, f"entries {last + 1} to {seq} are missing (the head anchor records {seq})"
    conn = open_reader(path)
    try:
        found = conn.execute("SELECT hash FROM audit WHERE seq = ?", (seq,)).fetchone()
    finally:
        conn.close()
    if found is None or found[0] != hash_:
        return seq, f"entry {seq} differs from the head anchor"
    return None


def _check(row: Sequence[Any], expected: int, prev_hash: str) -> tuple[int, str] | None:
    seq = row[0]
    if seq != expected:
        return expected, f"entry {expected} is missing (the next entry is {seq})"
    if row[8] != prev_hash:
        return seq, f"entry {seq} does not follow entry {seq - 1} (prev_hash differs)"
    try:
        entry = entry_of(tuple(row))
    except ValueError:
        return seq, f"entry {seq} has a body that is not valid JSON"
    if chain_hash(prev_hash, entry.record()) != entry.hash:
        return seq, f"entry {seq} was changed (its hash does not match its content)"
    return None
