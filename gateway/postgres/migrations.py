"""The PostgreSQL schema and its versioned migrations.

Every table lives in one schema (``storage.schema``), created if missing. ``schema_version``
holds one row per applied migration; `migrate` applies the missing ones in one transaction
under an advisory lock, so replicas starting together migrate once and the others wait. A
schema newer than this code is refused, naming both versions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import asyncpg

from gateway.approvals.errors import PendingStoreError
from gateway.postgres.event_tables import EVENT_TABLES, EVENT_TABLES_V2

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SchemaStatus", "migrate", "schema_status", "too_new"]

# The full record is one JSON document; the other columns are copies of the fields queries
# filter on, written from the record in one place (`gateway.postgres.pending`). ``version``
# counts writes: the compare-and-set of every transition. ``owner`` is the liveness key of the
# replica that claimed an executing call (`gateway.postgres.notify`).
_V1: Final = (
    """CREATE TABLE pending_calls (
        id text PRIMARY KEY, kind text NOT NULL, state text NOT NULL,
        principal text NOT NULL, session_id text, tool text NOT NULL,
        args_sha256 text NOT NULL, delivered boolean NOT NULL,
        created_at double precision NOT NULL, expires_at double precision NOT NULL,
        updated_at double precision NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY,
        version bigint NOT NULL DEFAULT 1, owner bigint, record jsonb NOT NULL)""",
    "CREATE INDEX pending_calls_by_state ON pending_calls (state, expires_at)",
    "CREATE INDEX pending_calls_by_call ON pending_calls (principal, tool, args_sha256)",
    "CREATE INDEX pending_calls_by_created ON pending_calls (created_at DESC, seq DESC)",
    # Every change of a pending call wakes the replicas waiting on it, at commit.
    """CREATE FUNCTION notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify(TG_TABLE_SCHEMA || '_pending', NEW.id); RETURN NULL; END $$""",
    """CREATE TRIGGER pending_calls_notify AFTER UPDATE ON pending_calls
        FOR EACH ROW EXECUTE FUNCTION notify_pending()""",
    "CREATE TABLE used_nonces (nonce text PRIMARY KEY, expires_at double precision NOT NULL)",
    "CREATE INDEX used_nonces_by_expiry ON used_nonces (expires_at)",
    """CREATE TABLE tool_pins (
        server text NOT NULL, tool text NOT NULL, record jsonb NOT NULL,
        PRIMARY KEY (server, tool))""",
    """CREATE TABLE sessions (
        key text PRIMARY KEY, version bigint NOT NULL,
        updated_at double precision NOT NULL, state jsonb NOT NULL)""",
    """CREATE TABLE grants (
        id text PRIMARY KEY, scope text NOT NULL, tool text NOT NULL, rule_id text,
        principal text, session_id text, tenant text,
        created_at double precision NOT NULL, expires_at double precision NOT NULL,
        revoked_at double precision, record jsonb NOT NULL)""",
    "CREATE INDEX grants_by_tool ON grants (tool, expires_at)",
    "CREATE INDEX grants_by_tenant ON grants (tenant, created_at)",
    # Rate-limit counters: one GCRA TAT per key, and whether its last hit fit
    # (`gateway.postgres.rate`). Unlogged: a hit commits without waiting for a WAL flush (a
    # few ms); a crash of the server empties it, and every limit starts afresh.
    """CREATE UNLOGGED TABLE rate_counters (
        key text PRIMARY KEY, tat double precision NOT NULL, fit boolean NOT NULL)""",
    "CREATE INDEX rate_counters_by_tat ON rate_counters (tat)",
)
_V2: Final = (
    # ``json``, not ``jsonb``: a session's state is written and read whole, often (see
    # `gateway.postgres.session_book`), and never queried inside.
    "ALTER TABLE sessions ALTER COLUMN state TYPE json USING state::json",
    *EVENT_TABLES_V2,
)
# Gateway tasks (`gateway.postgres.tasks`): the record, and who owns it, for tasks/list.
_V3: Final = (
    """CREATE TABLE tasks (
        id text PRIMARY KEY, principal text NOT NULL, tenant text, status text NOT NULL,
        created_at double precision NOT NULL, updated_at double precision NOT NULL,
        record jsonb NOT NULL)""",
    "CREATE INDEX tasks_by_owner ON tasks (principal, created_at DESC)",
)
# The vault (`gateway.postgres.vault`): per-principal upstream secrets, sealed (AES-GCM).
_V4: Final = (
    """CREATE TABLE credentials (
        id text NOT NULL, server text NOT NULL, principal text NOT NULL,
        created_at double precision NOT NULL, updated_at double precision NOT NULL,
        key_id text NOT NULL, sealed bytea NOT NULL, PRIMARY KEY (server, principal))""",
)
# Started ``oauth`` connects (`gateway.postgres.oauth_flows`), sealed; by the hash of their state.
_V5: Final = (
    """CREATE TABLE oauth_flows (
        key text PRIMARY KEY, server text NOT NULL, principal text NOT NULL,
        expires_at double precision NOT NULL, key_id text NOT NULL, sealed bytea NOT NULL)""",
    "CREATE INDEX oauth_flows_by_expiry ON oauth_flows (expires_at)",
)
MIGRATIONS: Final = ((*_V1, *EVENT_TABLES), _V2, _V3, _V4, _V5)
"""Migration ``n`` (from 0) takes the schema from version ``n`` to ``n + 1``."""
SCHEMA_VERSION: Final = len(MIGRATIONS)

_VERSION_TABLE: Final = """CREATE TABLE IF NOT EXISTS schema_version (
    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"""


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """Where a schema stands.

    Attributes:
        current: Its version (0: no lockgate tables yet).
        latest: The version this code migrates to (`SCHEMA_VERSION`).
    """

    current: int
    latest: int = SCHEMA_VERSION

    @property
    def behind(self) -> bool:
        """Migrations are waiting to be applied."""
        return self.current < self.latest

    @property
    def ahead(self) -> bool:
        """The schema is newer than this code: refused."""
        return self.current > self.latest


def too_new(status: SchemaStatus, where: str) -> PendingStoreError:
    """The error for a schema newer than this code, naming both versions and the fixes."""
    return PendingStoreError(
        f"{where} has schema version {status.current}; this lockgate knows versions up to "
        f"{status.latest}: upgrade lockgate (on every replica), or set storage.schema to "
        "another schema"
    )


async def schema_status(conn: asyncpg.Connection, schema: str) -> SchemaStatus:
    """The version of ``schema`` (0 when it or its ``schema_version`` table does not exist)."""
    table = await conn.fetchval("SELECT to_regclass($1)", f"{_quote(schema)}.schema_version")
    if table is None:
        return SchemaStatus(0)
    current = await conn.fetchval(
        f"SELECT coalesce(max(version), 0) FROM {_quote(schema)}.schema_version"
    )
    return SchemaStatus(int(current))


async def migrate(conn: asyncpg.Connection, schema: str, where: str) -> tuple[int, int]:
    """Bring ``schema`` to `SCHEMA_VERSION`; returns (version before, version after).

    Raises:
        PendingStoreError: The schema is newer than this code.
    """
    async with conn.transaction():
        # Held to the end of the transaction: a second replica waits here, then finds the
        # schema migrated.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"lockgate:{schema}")
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
        await conn.execute(f"SET LOCAL search_path TO {_quote(schema)}")
        await conn.execute(_VERSION_TABLE)
        status = await schema_status(conn, schema)
        if status.ahead:
            raise too_new(status, where)
        for version in range(status.current, SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", version + 1)
    return status.current, SCHEMA_VERSION


def _quote(name: str) -> str:
    """``name`` as a quoted identifier (the config already allows only ``[a-z0-9_]``)."""
    return '"' + name.replace('"', '""') + '"'
