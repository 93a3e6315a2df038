"""The shared event log, audit chain and webhook claims, with two replicas' worth of each on one
real PostgreSQL schema (in one process: the two-process tests are in ``test_replicas.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import asyncpg
import pytest
from pg_support import PG_DSN, fresh_schema, pg_settings

from gateway.audit.log import chain_hash
from gateway.events.bus import EventBus, Subscription
from gateway.events.model import Event
from gateway.postgres.audit import PostgresAuditLog, verify_database
from gateway.postgres.database import Database
from gateway.postgres.event_log import EventLog
from gateway.postgres.webhook_claims import WebhookClaims


@asynccontextmanager
async def replica_logs(schema: str, *names: str) -> AsyncIterator[list[tuple[EventBus, EventLog]]]:
    """One bus and event log per replica name, all on ``schema``."""
    async with AsyncExitStack() as stack:
        logs = []
        for name in names:
            database = Database(pg_settings(schema))
            stack.push_async_callback(database.close)
            bus = EventBus("lockgate-test")
            log = await stack.enter_async_context(EventLog(database, bus, replica=name))
            logs.append((bus, log))
        yield logs


async def collect(sub: Subscription, count: int) -> list[Event]:
    got: list[Event] = []
    with anyio.fail_after(30):
        async for event in sub:
            got.append(event)
            if len(got) == count:
                return got
    return got


def call_event(n: int, replica: str) -> Event:
    return Event(type="tool.call", data={"tool": "echo", "args": {"n": n}, "replica": replica})


async def test_each_replica_feed_carries_every_replicas_events_in_one_order() -> None:
    async with fresh_schema() as schema, replica_logs(schema, "a", "b") as logs:
        (bus_a, log_a), (bus_b, log_b) = logs
        async with log_a.feed.subscribe() as on_a, log_b.feed.subscribe() as on_b:
            for n in range(20):
                (bus_a if n % 2 else bus_b).publish(call_event(n, "a" if n % 2 else "b"))
            seen_a, seen_b = await collect(on_a, 20), await collect(on_b, 20)
    assert [e.id for e in seen_a] == [e.id for e in seen_b]
    assert sorted(e.data["args"]["n"] for e in seen_a) == list(range(20))


async def test_two_logs_of_one_replica_name_still_carry_every_event_once() -> None:
    # Two gateways in one process share the replica name: each takes its own rows back as
    # the events it wrote, and reads the other's like any replica's.
    async with fresh_schema() as schema, replica_logs(schema, "same", "same") as logs:
        (bus_a, log_a), (bus_b, log_b) = logs
        async with log_a.feed.subscribe() as on_a, log_b.feed.subscribe() as on_b:
            for n in range(10):
                (bus_a if n % 2 else bus_b).publish(call_event(n, "same"))
            seen_a, seen_b = await collect(on_a, 10), await collect(on_b, 10)
    assert [e.id for e in seen_a] == [e.id for e in seen_b]
    assert sorted(e.data["args"]["n"] for e in seen_a) == list(range(10))


async def test_a_replica_started_later_replays_the_cluster_from_any_event_id() -> None:
    async with fresh_schema() as schema:
        async with replica_logs(schema, "a") as [(bus_a, log_a)], log_a.feed.subscribe() as on_a:
            published = [bus_a.publish(call_event(n, "a")) for n in range(5)]
            await collect(on_a, 5)
        async with replica_logs(schema, "b") as [(_bus_b, log_b)]:
            replay = log_b.feed.replay_after(published[1].id)
    assert replay is not None
    assert [e.id for e in replay] == [e.id for e in published[2:]]


async def test_two_replicas_appending_together_build_one_verifiable_audit_chain() -> None:
    async with fresh_schema() as schema:
        databases = [Database(pg_settings(schema)) for _ in range(2)]
        try:
            logs = [PostgresAuditLog(d) for d in databases]
            events = [call_event(n, "x") for n in range(40)]
            async with anyio.create_task_group() as tg:
                for n, event in enumerate(events):
                    tg.start_soon(logs[n % 2].append_events, [event])
            again = await logs[0].append_events(events[:3])  # logged once per event id
            report = await verify_database(databases[0])
            tail = await logs[1].tail(40)
        finally:
            for d in databases:
                await d.close()
    assert report.ok, report.problem
    assert report.entries == 40
    first = {x.id for x in events[:3]}
    assert {e.event_id: e.seq for e in again} == {
        e.event_id: e.seq for e in tail if e.event_id in first
    }
    assert {e.event_id for e in tail} == {e.id for e in events}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"text": "ünïcødé ✓ 🚀 \u2028", "ratio": 0.1}, id="unicode"),
        pytest.param({"quote": '"seq":-7777777777777777,', "back": '\\ " \n'}, id="escapes"),
        pytest.param({"tool": None, "principal": None, "call_id": None}, id="nulls"),
    ],
)
async def test_the_database_chains_entries_as_the_embedded_log_hashes_them(
    data: dict[str, object],
) -> None:
    async with fresh_schema() as schema:
        database = Database(pg_settings(schema))
        try:
            log = PostgresAuditLog(database)
            events = [Event(type="tool.call", data=data | {"n": n}) for n in range(3)]
            entries = [*await log.append_events(events[:2]), *await log.append_events(events)]
            report = await verify_database(database)
        finally:
            await database.close()
    assert report.ok, report.problem
    assert [e.seq for e in entries] == [1, 2, 1, 2, 3]  # each logged once
    for entry in entries:
        assert entry.hash == chain_hash(entry.prev_hash, entry.record())


async def test_verify_names_a_changed_entry_and_a_removed_newest_one() -> None:
    async with fresh_schema() as schema:
        database = Database(pg_settings(schema))
        try:
            await PostgresAuditLog(database).append_events([call_event(n, "x") for n in range(5)])
            conn = await asyncpg.connect(PG_DSN, server_settings={"search_path": schema})
            try:
                await conn.execute("DELETE FROM audit WHERE seq = 5")
                truncated = await verify_database(database)
                await conn.execute("UPDATE audit SET principal = 'mallory' WHERE seq = 2")
                changed = await verify_database(database)
            finally:
                await conn.close()
        finally:
            await database.close()
    assert not truncated.ok
    assert truncated.problem == "entries 5 to 5 are missing (the head records 5)"
    assert not changed.ok
    assert changed.first_bad_seq == 2


@pytest.mark.parametrize("contenders", [2, 5])
async def test_exactly_one_replica_claims_each_webhook_delivery(contenders: int) -> None:
    async with fresh_schema() as schema:
        databases = [Database(pg_settings(schema)) for _ in range(contenders)]
        try:
            claims = [WebhookClaims(d, f"r{n}") for n, d in enumerate(databases)]
            events = [call_event(n, "x") for n in range(10)]
            won: list[tuple[str, int]] = []

            async def contend(n: int, event: Event) -> None:
                if await claims[n](event, "https://hooks.example/a"):
                    won.append((event.id, n))

            async with anyio.create_task_group() as tg:
                for event in events:
                    for n in range(contenders):
                        tg.start_soon(contend, n, event)
            other = await claims[0](events[0], "https://hooks.example/b")
        finally:
            for d in databases:
                await d.close()
    assert sorted(event_id for event_id, _ in won) == sorted(e.id for e in events)
    assert other  # a second webhook is claimed separately
