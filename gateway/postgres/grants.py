"""`PostgresGrantStore`: grants in the shared schema (table ``grants``), so a grant made on one
replica answers calls on every replica.

Revoking is one compare-and-set statement: ``UPDATE grants ... WHERE id = $1 AND revoked_at IS
NULL``, after `Grant.revoked` checked the record read; of two revokers one updates the row, the
other reads it again and gets `GrantConflict`.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Final

import asyncpg

from gateway.approvals.errors import GrantNotFound, PendingStoreError
from gateway.approvals.grants import Grant, Match
from gateway.postgres.database import Conn, Database
from toolsets.canonical import canonical_json

__all__ = ["PostgresGrantStore"]

_INSERT: Final = (
    "INSERT INTO grants (id, scope, tool, rule_id, principal, session_id, tenant, created_at,"
    " expires_at, revoked_at, record) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"
)
# ``IS NOT DISTINCT FROM`` compares NULLs as equal: a grant of the default rule, no tenant.
_MATCHING: Final = """SELECT record FROM grants WHERE tool = $1
    AND rule_id IS NOT DISTINCT FROM $2 AND tenant IS NOT DISTINCT FROM $3
    AND revoked_at IS NULL AND expires_at > $4
    AND ((scope = 'tool' AND (principal IS NULL OR principal = $5))
      OR (scope = 'session' AND principal = $5 AND session_id IS NOT DISTINCT FROM $6))
    ORDER BY created_at"""
_REVOKE: Final = (
    "UPDATE grants SET revoked_at = $2, record = $3 WHERE id = $1 AND revoked_at IS NULL"
    " RETURNING id"
)


def _decode(record: str) -> Grant:
    try:
        return Grant.from_json(json.loads(record))
    except (ValueError, TypeError) as exc:
        raise PendingStoreError(f"Corrupt grant record: {exc}") from exc


def _text(grant: Grant) -> str:
    return canonical_json(grant.to_json()).decode()


def _row(grant: Grant) -> tuple[Any, ...]:
    return (
        *(grant.id, grant.scope, grant.tool, grant.rule_id, grant.principal, grant.session_id),
        *(grant.tenant, grant.created_at, grant.expires_at, grant.revoked_at, _text(grant)),
    )


class PostgresGrantStore:
    """Implements `gateway.approvals.grant_store.GrantStore` on PostgreSQL.

    Args:
        database: The shared database; closed by the pending store that shares it.
    """

    def __init__(self, database: Database) -> None:
        self.database = database

    async def add(self, grant: Grant) -> None:
        tries = 0

        async def insert(conn: Conn) -> None:
            nonlocal tries
            tries += 1
            try:
                await conn.execute(_INSERT, *_row(grant))
            except asyncpg.UniqueViolationError:
                if tries == 1 or await self._read(conn, grant.id) != grant:  # else: try 1 did
                    raise ValueError(f"Grant {grant.id!r} already exists") from None

        await self.database.run(insert)

    async def get(self, id: str) -> Grant | None:
        async def load(conn: Conn) -> Grant | None:
            return await self._read(conn, id)

        return await self.database.run(load)

    async def find_matching(self, match: Match) -> Grant | None:
        params = (match.tool, match.rule_id, match.tenant, match.now, match.principal)

        async def find(conn: Conn) -> Grant | None:
            for row in await conn.fetch(_MATCHING, *params, match.session_id):
                grant = _decode(row[0])
                if grant.covers(match):  # the scopes the rule offers now
                    return grant
            return None

        return await self.database.run(find)

    async def list(
        self, *, tenant: str | None, active_at: float | None, limit: int = 1000
    ) -> builtins.list[Grant]:
        sql = "SELECT record FROM grants WHERE tenant IS NOT DISTINCT FROM $1"
        params: builtins.list[Any] = [tenant]
        if active_at is not None:
            params.append(active_at)
            sql += " AND revoked_at IS NULL AND expires_at > $2"
        params.append(limit)
        sql += f" ORDER BY created_at DESC, id DESC LIMIT ${len(params)}"

        async def select(conn: Conn) -> builtins.list[Grant]:
            return [_decode(row[0]) for row in await conn.fetch(sql, *params)]

        return await self.database.run(select)

    async def revoke(self, id: str, *, by: str, at: float) -> Grant:
        tries = 0

        async def revoke(conn: Conn) -> Grant:
            nonlocal tries
            tries += 1
            while True:
                grant = await self._read(conn, id)
                if grant is None:
                    raise GrantNotFound(id)
                if tries > 1 and (grant.revoked_by, grant.revoked_at) == (by, at):
                    return grant  # the first try committed before its connection broke
                revoked = grant.revoked(by=by, at=at)  # raises GrantConflict
                if await conn.fetchval(_REVOKE, id, at, _text(revoked)) is not None:
                    return revoked

        return await self.database.run(revoke)

    async def close(self) -> None:
        """Nothing: the pool belongs to the pending store."""

    async def _read(self, conn: Conn, id: str) -> Grant | None:
        row = await conn.fetchrow("SELECT record FROM grants WHERE id = $1", id)
        return None if row is None else _decode(row[0])
