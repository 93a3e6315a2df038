"""The grant stores (memory, and SQLite in the pending store's file): what a grant covers, when
it stops, listing by tenant, and revoking as a compare-and-set."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from pg_support import fresh_schema, pg_settings

from gateway.approvals.errors import GrantConflict, GrantNotFound
from gateway.approvals.grant_store import GrantStore
from gateway.approvals.grants import Grant, Match
from gateway.memory.grants import MemoryGrantStore
from gateway.postgres.database import Database
from gateway.postgres.grants import PostgresGrantStore
from gateway.sqlite.grants import SQLiteGrantStore
from gateway.sqlite.pending import SQLitePendingStore
from gateway.sqlite.schema import MIGRATIONS

GrantFactory = Callable[[], GrantStore]

TOOL_GRANT = Grant(
    id="gr_tool",
    scope="tool",
    tool="tickets__purge",
    server="tickets",
    rule_id="purge-needs-security",
    principal=None,
    session_id=None,
    created_by="user:alice",
    created_at=1000.0,
    expires_at=1600.0,
    approval_id="ap_1",
)
SESSION_GRANT = replace(
    TOOL_GRANT, id="gr_session", scope="session", principal="agent:bot", session_id="s-1"
)


def _call(**changes: object) -> Match:
    """A later call of agent:bot in session s-1 under the tool grant's rule, at t=1100."""
    match = Match(
        tool="tickets__purge",
        server="tickets",
        rule_id="purge-needs-security",
        principal="agent:bot",
        session_id="s-1",
        tenant=None,
        scopes=("once", "session", "tool"),
        now=1100.0,
    )
    return replace(match, **changes)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def make_grants(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[GrantFactory]:
    """Builds grant stores of the parametrized backend (SQLite ones share one file,
    PostgreSQL ones one fresh schema)."""
    made: list[GrantStore] = []
    async with fresh_schema() as schema:

        def make() -> GrantStore:
            if request.param == "postgres":
                store: GrantStore = PostgresGrantStore(Database(pg_settings(schema)))
            elif request.param == "memory":
                store = MemoryGrantStore()
            else:
                store = SQLiteGrantStore(tmp_path / "p.db")
            made.append(store)
            return store

        yield make
        for store in made:
            await store.close()
            if isinstance(store, PostgresGrantStore):
                await store.database.close()


async def test_a_tool_grant_covers_anyone_of_the_tenant_under_its_rule_until_it_expires(
    make_grants: GrantFactory,
) -> None:
    store = make_grants()
    await store.add(TOOL_GRANT)
    assert await store.find_matching(_call()) == TOOL_GRANT
    assert await store.find_matching(_call(principal="agent:other", session_id=None)) == TOOL_GRANT
    assert await store.find_matching(_call(now=1599.0)) == TOOL_GRANT
    assert await store.find_matching(_call(now=1600.0)) is None  # expired
    assert await store.find_matching(_call(rule_id="other-rule")) is None
    assert await store.find_matching(_call(rule_id=None)) is None
    assert await store.find_matching(_call(tool="tickets__list")) is None
    assert await store.find_matching(_call(server="crm")) is None  # the same name elsewhere
    assert await store.find_matching(_call(tenant="acme")) is None
    assert await store.find_matching(_call(scopes=("once", "session"))) is None  # not offered now


async def test_a_tool_grant_naming_its_caller_covers_only_that_caller(
    make_grants: GrantFactory,
) -> None:
    store = make_grants()
    await store.add(replace(TOOL_GRANT, principal="agent:bot"))
    assert await store.find_matching(_call(session_id="another")) is not None
    assert await store.find_matching(_call(principal="agent:other")) is None


async def test_a_session_grant_covers_only_its_callers_session(make_grants: GrantFactory) -> None:
    store = make_grants()
    await store.add(SESSION_GRANT)
    assert await store.find_matching(_call()) == SESSION_GRANT
    assert await store.find_matching(_call(session_id="s-2")) is None
    assert await store.find_matching(_call(session_id=None)) is None
    assert await store.find_matching(_call(principal="agent:other")) is None
    sessionless = replace(SESSION_GRANT, id="gr_none", session_id=None)
    await store.add(sessionless)  # a caller's calls without a session key share one session
    assert await store.find_matching(_call(session_id=None)) == sessionless


async def test_the_default_rules_grant_matches_calls_the_default_decided(
    make_grants: GrantFactory,
) -> None:
    store = make_grants()
    await store.add(replace(TOOL_GRANT, rule_id=None, tenant="acme"))
    assert await store.find_matching(_call(rule_id=None, tenant="acme")) is not None
    assert await store.find_matching(_call(rule_id=None)) is None


async def test_one_of_two_concurrent_revokers_wins_the_other_conflicts(
    make_grants: GrantFactory,
) -> None:
    first, second = make_grants(), make_grants()  # SQLite: two connections to one file
    await first.add(TOOL_GRANT)
    outcomes: list[Grant | GrantConflict] = []

    async def revoke(store: GrantStore, by: str) -> None:
        try:
            outcomes.append(await store.revoke(TOOL_GRANT.id, by=by, at=1200.0))
        except GrantConflict as exc:
            outcomes.append(exc)

    shared = second if isinstance(first, SQLiteGrantStore) else first
    async with anyio.create_task_group() as tg:
        tg.start_soon(revoke, first, "user:alice")
        tg.start_soon(revoke, shared, "user:bob")
    (won,) = [o for o in outcomes if isinstance(o, Grant)]
    (lost,) = [o for o in outcomes if isinstance(o, GrantConflict)]
    assert won.revoked_at == 1200.0
    assert won.revoked_by in {"user:alice", "user:bob"}
    assert f"revoked already by {won.revoked_by}" in str(lost)
    assert await first.find_matching(_call()) is None
    assert await first.get(TOOL_GRANT.id) == won


async def test_an_expired_grant_cannot_be_revoked_and_an_unknown_one_is_not_found(
    make_grants: GrantFactory,
) -> None:
    store = make_grants()
    await store.add(TOOL_GRANT)
    with pytest.raises(GrantConflict, match="expired"):
        await store.revoke(TOOL_GRANT.id, by="user:alice", at=1600.0)
    with pytest.raises(GrantNotFound):
        await store.revoke("gr_nope", by="user:alice", at=1200.0)
    with pytest.raises(ValueError, match="already exists"):
        await store.add(TOOL_GRANT)


async def test_listing_shows_a_tenants_active_grants_newest_first_or_all_of_them(
    make_grants: GrantFactory,
) -> None:
    store = make_grants()
    later = replace(SESSION_GRANT, created_at=1050.0)
    stale = replace(TOOL_GRANT, id="gr_stale", created_at=900.0, expires_at=1000.0)
    acme = replace(TOOL_GRANT, id="gr_acme", tenant="acme")
    for grant in (TOOL_GRANT, later, stale, acme):
        await store.add(grant)
    await store.revoke(later.id, by="user:bob", at=1060.0)
    active = await store.list(tenant=None, active_at=1100.0)
    everything = await store.list(tenant=None, active_at=None)
    assert [g.id for g in active] == [TOOL_GRANT.id]
    assert [g.id for g in everything] == [later.id, TOOL_GRANT.id, stale.id]
    assert [g.id for g in await store.list(tenant="acme", active_at=1100.0)] == [acme.id]


async def test_a_version_3_file_gains_the_grants_table_and_grants_outlive_the_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    conn = sqlite3.connect(path)
    for statement in (s for migration in MIGRATIONS[:3] for s in migration):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    store = SQLiteGrantStore(path)
    await store.add(SESSION_GRANT)
    await store.close()
    async with SQLitePendingStore(path) as pending:
        assert await pending.list() == []
    reopened = SQLiteGrantStore(path)
    assert await reopened.find_matching(_call()) == SESSION_GRANT
    await reopened.close()
