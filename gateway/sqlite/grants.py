"""`SQLiteGrantStore`: grants in the gateway's SQLite file (table ``grants``), durable across
restarts; each write is one ``IMMEDIATE`` transaction, so several processes may share it."""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
from typing import Any, Final

from gateway.approvals.errors import GrantNotFound, PendingStoreError
from gateway.approvals.grants import Grant, Match
from gateway.sqlite.schema import SQLiteFile, immediate
from toolsets.canonical import canonical_json

__all__ = ["SQLiteGrantStore"]

_INSERT: Final = (
    "INSERT INTO grants (id, scope, tool, rule_id, principal, session_id, tenant, created_at,"
    " expires_at, revoked_at, record) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
# ``IS ?`` compares NULLs as equal: a grant of the default rule, or without a tenant.
_MATCHING: Final = (
    "SELECT record FROM grants WHERE tool = ? AND rule_id IS ? AND tenant IS ?"
    " AND revoked_at IS NULL AND expires_at > ?"
    " AND ((scope = 'tool' AND (principal IS NULL OR principal = ?))"
    "  OR (scope = 'session' AND principal = ? AND session_id IS ?))"
    " ORDER BY created_at"
)


def _decode(record: str) -> Grant:
    try:
        return Grant.from_json(json.loads(record))
    except (ValueError, TypeError) as exc:
        raise PendingStoreError(f"Corrupt grant record: {exc}") from exc


def _row(grant: Grant) -> tuple[Any, ...]:
    return (
        *(grant.id, grant.scope, grant.tool, grant.rule_id, grant.principal, grant.session_id),
        *(grant.tenant, grant.created_at, grant.expires_at, grant.revoked_at),
        canonical_json(grant.to_json()).decode(),
    )


class SQLiteGrantStore:
    """Implements `gateway.approvals.grant_store.GrantStore` on the gateway's SQLite file.

    Args:
        path: The database file (the pending store's).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = SQLiteFile(path)

    async def add(self, grant: Grant) -> None:
        def insert(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(_INSERT, _row(grant))
            except sqlite3.IntegrityError as exc:
                raise ValueError(f"Grant {grant.id!r} already exists") from exc

        await self._file.run(insert)

    async def get(self, id: str) -> Grant | None:
        def load(conn: sqlite3.Connection) -> Grant | None:
            row = conn.execute("SELECT record FROM grants WHERE id = ?", (id,)).fetchone()
            return None if row is None else _decode(row[0])

        return await self._file.run(load)

    async def find_matching(self, match: Match) -> Grant | None:
        who = match.principal
        params = (match.tool, match.rule_id, match.tenant, match.now, who, who, match.session_id)

        def find(conn: sqlite3.Connection) -> Grant | None:
            for (record,) in conn.execute(_MATCHING, params):
                grant = _decode(record)
                if grant.covers(match):  # the scopes the rule offers now
                    return grant
            return None

        return await self._file.run(find)

    async def list(
        self, *, tenant: str | None, active_at: float | None, limit: int = 1000
    ) -> builtins.list[Grant]:
        sql = "SELECT record FROM grants WHERE tenant IS ?"
        params: builtins.list[Any] = [tenant]
        if active_at is not None:
            sql += " AND revoked_at IS NULL AND expires_at > ?"
            params.append(active_at)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        params.append(limit)

        def select(conn: sqlite3.Connection) -> builtins.list[Grant]:
            return [_decode(record) for (record,) in conn.execute(sql, params)]

        return await self._file.run(select)

    async def revoke(self, id: str, *, by: str, at: float) -> Grant:
        def revoke(conn: sqlite3.Connection) -> Grant:
            # IMMEDIATE holds the write lock from the read to the write: the compare-and-set.
            with immediate(conn):
                row = conn.execute("SELECT record FROM grants WHERE id = ?", (id,)).fetchone()
                if row is None:
                    raise GrantNotFound(id)
                revoked = _decode(row[0]).revoked(by=by, at=at)
                conn.execute(
                    "UPDATE grants SET revoked_at = ?, record = ? WHERE id = ?",
                    (at, canonical_json(revoked.to_json()).decode(), id),
                )
            return revoked

        return await self._file.run(revoke)

    async def close(self) -> None:
        """Close the connection."""
        await self._file.close()
