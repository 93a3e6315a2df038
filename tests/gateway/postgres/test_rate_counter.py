"""The PostgreSQL rate counter: the embedded counter's answers, shared by replicas, atomic under
concurrency, expired rows swept, and an outage failing closed or counting locally.

Real PostgreSQL on 127.0.0.1:5432, a fresh schema per test; each `Database` is one replica's
pool."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import anyio
import asyncpg
import pytest
from pg_support import PG_DSN, fresh_schema, pg_settings

from gateway.memory.rate_counter import MemoryRateCounter
from gateway.postgres.database import Database
from gateway.postgres.rate import SWEEP_INTERVAL, PostgresRateCounter
from toolsets.errors import StoreUnavailable
from toolsets.rates import Rate, RateCounter, RateVerdict

NOW = 1_800_000_000.0
PER_MINUTE = Rate(count=6, period=60.0, burst=3)
"""One call each 10 s, three at once."""

Replicas = Callable[[int], Any]


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


@contextlib.asynccontextmanager
async def databases(schema: str, count: int, **settings: Any) -> AsyncIterator[list[Database]]:
    """``count`` replicas' pools on ``schema``, closed after."""
    opened = [Database(replace(pg_settings(schema), **settings)) for _ in range(count)]
    try:
        yield opened
    finally:
        for database in opened:
            await database.close()


async def answers(counter: RateCounter, steps: list[tuple[str, float]]) -> list[tuple[bool, float]]:
    """The verdicts of hits at ``NOW + offset`` under each key, retry_after rounded to 1 µs."""
    verdicts = [await counter.hit(key, PER_MINUTE, NOW + offset) for key, offset in steps]
    return [(v.allowed, round(v.retry_after, 6)) for v in verdicts]


STEPS = [("a", 0), ("a", 0), ("a", 1), ("a", 1), ("b", 2), ("a", 9.5), *[("a", 20)] * 3]


async def test_the_shared_counter_answers_as_the_embedded_one(schema: str) -> None:
    async with databases(schema, 1) as [database]:
        shared = await answers(PostgresRateCounter(database), STEPS)
    assert shared == await answers(MemoryRateCounter(), STEPS)
    assert shared == [
        (True, 0),
        (True, 0),
        (True, 0),
        (False, 9),
        (True, 0),
        (False, 0.5),
        (True, 0),
        (True, 0),
        (False, 10),
    ]


async def test_replicas_on_one_schema_count_against_one_limit(schema: str) -> None:
    async with databases(schema, 2) as [a, b]:
        one, two = PostgresRateCounter(a), PostgresRateCounter(b)
        verdicts = [await counter.hit("k", PER_MINUTE, NOW) for counter in (one, two, one, two)]
    assert [v.allowed for v in verdicts] == [True, True, True, False]


async def test_concurrent_hits_from_two_replicas_never_pass_more_than_the_burst(
    schema: str,
) -> None:
    rate = Rate(count=10, period=3600.0, burst=10)
    verdicts: list[RateVerdict] = []
    async with databases(schema, 2, pool_size=8) as replicas:
        counters = [PostgresRateCounter(database) for database in replicas]
        await counters[0].hit("warm", rate, NOW)  # migrate once before the rush

        async def hit(index: int) -> None:
            verdicts.append(await counters[index % 2].hit("k", rate, NOW))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for index in range(50):
                    tg.start_soon(hit, index)
    assert sum(v.allowed for v in verdicts) == 10
    assert all(v.retry_after > 0 for v in verdicts if not v.allowed)


async def test_counters_whose_time_has_passed_are_deleted(schema: str) -> None:
    async with databases(schema, 1) as [database]:
        counter = PostgresRateCounter(database)
        for index in range(5):
            await counter.hit(f"old-{index}", PER_MINUTE, NOW)
        await counter.hit("new", PER_MINUTE, NOW + SWEEP_INTERVAL)
    conn = await asyncpg.connect(PG_DSN, server_settings={"search_path": schema})
    try:
        keys = [row["key"] for row in await conn.fetch("SELECT key FROM rate_counters")]
    finally:
        await conn.close()
    assert keys == ["new"]


UNREACHABLE = "postgresql://postgres@127.0.0.1:1/postgres"


async def test_an_unreachable_database_fails_the_hit_closed_by_default(schema: str) -> None:
    async with databases(schema, 1, dsn=UNREACHABLE, connect_timeout=0.2) as [database]:
        with pytest.raises(StoreUnavailable, match=r"127\.0\.0\.1:1\b"):
            await PostgresRateCounter(database).hit("k", PER_MINUTE, NOW)


async def test_with_serve_allowed_an_outage_counts_in_the_replicas_memory(schema: str) -> None:
    async with databases(schema, 1, dsn=UNREACHABLE, connect_timeout=0.2) as [database]:
        counter = PostgresRateCounter(database, on_outage="serve_allowed")
        verdicts = [await counter.hit("k", PER_MINUTE, NOW) for _ in range(4)]
    assert [v.allowed for v in verdicts] == [True, True, True, False]
