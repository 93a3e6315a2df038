"""A database outage: calls that need a decision fail closed naming the database, allowed calls
go on when ``on_outage: serve_allowed`` says so (and fail closed when it does not), and the
gateway recovers by itself once the database is back. The outage is a cut TCP link
(`pg_support.CuttableLink`) between an in-process gateway and the test server, or, for two
``lockgate serve`` replicas, a private PostgreSQL cluster stopped and started again
(`pg_support.PrivateCluster`; the shared test server is never stopped)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import (
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
    while_held,
)
from mcp_types import CallToolResult
from pg_e2e_support import BUDGET_TOOL, Replicas, replica, replica_config, session_client
from pg_support import CuttableLink, cuttable_link, fresh_schema, private_cluster
from support import free_port, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

HELD = "recorder__record_brief"
"""Held for 0.5 s, then answered "pending" (re-issued once approved, it runs)."""
WAITING = "recorder__record"
"""Held for up to 10 s while the caller waits."""


@pytest.fixture
async def link() -> AsyncIterator[CuttableLink]:
    async with cuttable_link() as link:
        yield link


@contextlib.asynccontextmanager
async def _client(tmp_path: Path, link: CuttableLink, on_outage: str) -> AsyncIterator[Any]:
    """A client of a gateway on a fresh schema through ``link``, its first call made (all up)."""
    async with fresh_schema() as schema:
        config = replica_config(
            tmp_path, schema, dsn=link.dsn, on_outage=on_outage, connect_timeout=0.5
        )
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            session_client(f"{base}/mcp", "auto") as client,
        ):
            await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
            yield client


async def test_an_outage_fails_held_calls_closed_serves_allowed_ones_and_recovers(
    tmp_path: Path, link: CuttableLink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKGATE_REPLICA", "solo")
    async with _client(tmp_path, link, "serve_allowed") as client:
        link.cut()
        allowed = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
        refused = await client.call_tool(HELD, {"value": marker("held")})
        link.restore()
        held = await client.call_tool(HELD, {"value": marker("held-later")})
    assert text_of(allowed).startswith("recorded ")
    assert refused.is_error
    assert text_of(refused).startswith("Not executed: PostgreSQL at 127.0.0.1:")
    assert f":{link.port}/postgres" in text_of(refused)
    assert pending_meta(held)["state"] == "pending"  # held on record again: recovered


async def test_fail_closed_refuses_even_allowed_calls_while_the_database_is_away(
    tmp_path: Path, link: CuttableLink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCKGATE_REPLICA", "solo")
    async with _client(tmp_path, link, "fail_closed") as client:
        link.cut()
        refused = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
        link.restore()
        allowed = await client.call_tool(BUDGET_TOOL, {"value": marker("free")})
    assert refused.is_error
    assert "is unreachable" in text_of(refused)
    assert text_of(allowed).startswith("recorded ")


@dataclass(frozen=True)
class _Held:
    """The calls held on A before the outage: ``kept`` (never decided until the database is
    back), ``before`` (approved before the outage), ``during`` (decided while it is away)."""

    kept: str
    before: str
    during: str
    ids: dict[str, str]


@pytest.mark.serial  # stops and starts a database (a private one)
async def test_two_replicas_ride_out_a_stopped_database_and_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    budget = 60.0  # seconds after the database's return for everything to have recovered
    timeline: dict[str, float] = {}
    async with private_cluster(free_port()) as cluster:
        config = replica_config(tmp_path, "lockgate", dsn=cluster.dsn, connect_timeout=1)
        async with replica(config, "a") as a, replica(config, "b") as b:
            run = Replicas(a=a, b=b, config=config, log=tmp_path / "executions.jsonl")
            held = await _hold_and_approve_one(run)
            await cluster.stop()
            stopped = anyio.current_time()
            away = await _while_away(run, held, cluster.port, lambda k: _mark(timeline, k, stopped))
            await anyio.sleep(max(0.0, stopped + 10 - anyio.current_time()))
            await cluster.start()
            started = anyio.current_time()
            timeline["outage"] = started - stopped
            await _back(run, held, budget, lambda key: _mark(timeline, key, started))
            timeline["woke"] = await _notified_after_return(run)
    print("timeline (s):", {key: round(value, 2) for key, value in timeline.items()})
    assert timeline["recovered"] < budget, timeline
    assert run.executions(held.before) == [{"value": held.before}]
    assert run.executions(held.during) == [{"value": held.during}]
    assert run.executions(held.kept) == []
    assert run.executions(away) == []  # refused, never run undecided
    assert timeline["woke"] < 3.0, timeline  # by NOTIFY on the new LISTEN, not the 5 s re-read


def _mark(timeline: dict[str, float], key: str, since: float) -> None:
    timeline[key] = anyio.current_time() - since


async def _hold_and_approve_one(run: Replicas) -> _Held:
    kept, before, during = marker("kept"), marker("before"), marker("during")
    ids = {value: (await _held(run.a.mcp_url, value))["id"] for value in (kept, before, during)}
    async with api_client(run.b.base) as api:
        assert (await decide(api, ids[before], "approve")).status_code == 200
    return _Held(kept=kept, before=before, during=during, ids=ids)


async def _while_away(run: Replicas, held: _Held, port: int, mark: Callable[[str], None]) -> str:
    """Both replicas degraded naming the store, a decision refused (503), a held call refused
    naming the database; the value of that call."""
    for base in (run.a.base, run.b.base):
        await _until(lambda base=base: _degraded(base, port), within=15)
    mark("degraded")
    async with api_client(run.b.base) as api:
        refused = await decide(api, held.ids[held.during], "approve")
    assert refused.status_code == 503, refused.text
    away = marker("while-away")
    async with session_client(run.a.mcp_url, "auto") as client:
        closed = await client.call_tool(HELD, {"value": away})
    assert closed.is_error
    assert text_of(closed).startswith("Not executed: PostgreSQL at 127.0.0.1:")
    return away


async def _back(run: Replicas, held: _Held, budget: float, mark: Callable[[str], None]) -> None:
    """Healthy and serving /mcp again (no restart), the kept call still pending and decidable,
    the approved calls run once re-issued (and not again when re-issued once more)."""
    for base in (run.a.base, run.b.base):
        await _until(lambda base=base: _healthy(base), within=budget)
    mark("healthy")
    for url in (run.a.mcp_url, run.b.mcp_url):
        await _until(lambda url=url: _serves(url), within=budget)
    mark("serving")
    async with api_client(run.b.base) as api:
        record = (await api.get(f"/api/approvals/{held.ids[held.kept]}")).json()
        assert record["state"] == "pending", record
        assert (await decide(api, held.ids[held.during], "approve")).status_code == 200
        assert (await decide(api, held.ids[held.kept], "deny")).status_code == 200
    assert await _reissue(run.b.mcp_url, held.before) == f"recorded {held.before}"
    assert await _reissue(run.a.mcp_url, held.during) == f"recorded {held.during}"
    for value in (held.before, held.during):
        await _reissue(run.a.mcp_url, value)
    mark("recovered")


async def _health(base: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        response = await http.get("/healthz")
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _until(check: Callable[[], Awaitable[bool]], *, within: float) -> None:
    """Poll ``check`` until it holds (at most ``within`` seconds)."""
    with anyio.fail_after(within):
        while not await check():
            await anyio.sleep(0.2)


async def _held(url: str, value: str) -> dict[str, Any]:
    async with session_client(url, "auto") as client:
        meta = pending_meta(await client.call_tool(HELD, {"value": value}))
    assert meta.get("state") == "pending", meta
    return meta


async def _reissue(url: str, value: str) -> str:
    async with session_client(url, "auto") as client:
        return text_of(await client.call_tool(HELD, {"value": value}))


async def _serves(url: str) -> bool:
    """Whether a new session on ``url`` gets an allowed call through."""
    with contextlib.suppress(Exception):
        async with session_client(url, "auto") as client:
            result = await client.call_tool(BUDGET_TOOL, {"value": marker("probe")})
        return text_of(result).startswith("recorded ")
    return False


async def _degraded(base: str, port: int) -> bool:
    body = await _health(base)
    store = body.get("store", {})
    return (
        body["status"] == "degraded"
        and store.get("status") == "down"
        and f"PostgreSQL at 127.0.0.1:{port}" in str(store.get("detail"))
    )


async def _healthy(base: str) -> bool:
    body = await _health(base)
    return body["status"] == "ok" and body.get("store", {}).get("status") == "up"


async def _notified_after_return(run: Replicas) -> float:
    """Seconds between a decision on B and the answer of A's caller waiting on it."""
    value = marker("waiting")
    decided_at: list[float] = []

    async def call() -> tuple[CallToolResult, float]:
        async with session_client(run.a.mcp_url, "auto") as client:
            result = await client.call_tool(WAITING, {"value": value})
        return result, anyio.current_time()

    async def approve_on_b() -> None:
        async with api_client(run.b.base) as api:
            held = await wait_for_call(api, value)
            assert (await decide(api, held["id"], "approve")).status_code == 200
            decided_at.append(anyio.current_time())

    with anyio.fail_after(30):
        (result, answered_at), _ = await while_held(call, approve_on_b)
    assert text_of(result) == f"recorded {value}", result
    assert run.executions(value) == [{"value": value}]
    return answered_at - decided_at[0]
