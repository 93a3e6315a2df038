"""The operator console on the PostgreSQL backend: two gateways (replicas) share one schema of
the real server at 127.0.0.1:5432; the console of either reads the shared audit chain (tail,
verify, replay) and every replica's sessions from the shared store."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx2
import pytest
from pg_support import PG_DSN, fresh_schema, pg_storage
from support import echo_upstream, serve_asgi, write_config
from web_support import HERE, marker

from gateway import Gateway
from gateway.http.app import build_app
from toolsets import CallContext, Principal

OPERATOR_TOKEN = "pg-operator-token-for-tests"
ACME_TOKEN = "pg-acme-operator-token-for-tests"
CANDIDATE = """version: 1
defaults: {effect: allow}
rules:
  - {id: no-echo, tools: [e__echo], effect: deny, reason: "no echo any more"}
"""


@dataclass(frozen=True)
class Replica:
    url: str
    gateway: Gateway


@dataclass(frozen=True)
class Cluster:
    a: Replica
    b: Replica
    schema: str


def _config(directory: Path, schema: str) -> Path:
    directory.mkdir()
    operator = {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator"]}
    tina = {"id": "user:tina", "token": ACME_TOKEN, "roles": ["operator"], "tenant": "acme"}
    return write_config(
        directory,
        [echo_upstream("e")],
        policies={"files": [str(HERE / "fixtures" / "console.yaml")]},
        storage=pg_storage(schema),
        auth={"approvers": [operator, tina]},
    )


@contextlib.asynccontextmanager
async def _replica(config: Path) -> AsyncIterator[Replica]:
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as url:
        assert await gateway.wait_ready(30)
        yield Replica(url, gateway)


@pytest.fixture(scope="module")
async def cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    folder = tmp_path_factory.mktemp("console-pg")
    async with (
        fresh_schema() as schema,
        _replica(_config(folder / "a", schema)) as a,
        _replica(_config(folder / "b", schema)) as b,
    ):
        yield Cluster(a, b, schema)


@contextlib.asynccontextmanager
async def _operator(
    replica: Replica, token: str = OPERATOR_TOKEN
) -> AsyncIterator[httpx2.AsyncClient]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=replica.url, headers=headers, timeout=30) as client:
        yield client


def _as(caller: str, session: str) -> CallContext:
    return CallContext(principal=Principal(id=caller), session_id=session)


async def _audited(replica: Replica, *callers: str) -> list[dict[str, Any]]:
    """The console's audit entries, once a ``tool.call`` of each of ``callers`` is among them:
    call events reach the shared chain in the background (group-committed)."""
    async with _operator(replica) as api:
        with anyio.fail_after(30):
            while True:
                response = await api.get("/api/console/audit?limit=500")
                assert response.status_code == 200, response.text
                items: list[dict[str, Any]] = response.json()["items"]
                seen = {e["principal"] for e in items if e["kind"] == "tool.call"}
                if seen.issuperset(callers):
                    return items
                await anyio.sleep(0.05)  # nothing signals an append; the log is polled


async def test_the_audit_section_shows_every_replicas_calls_from_the_shared_chain(
    cluster: Cluster,
) -> None:
    on_a, on_b = marker("agent:on-a"), marker("agent:on-b")
    await cluster.a.gateway.call_tool("e__echo", {"text": "a"}, _as(on_a, "s"))
    await cluster.b.gateway.call_tool("e__echo", {"text": "b"}, _as(on_b, "s"))
    for replica in (cluster.a, cluster.b):
        items = await _audited(replica, on_a, on_b)
        seqs = [e["seq"] for e in items]
        assert seqs == sorted(seqs)  # one chain, oldest first
        assert {e["tool"] for e in items if e["principal"] in (on_a, on_b)} == {"e__echo"}


async def _tamper(schema: str, seq: int, body: str | None) -> str:
    """Set entry ``seq``'s body to ``body`` (None: leave it); its body before."""
    conn = await asyncpg.connect(PG_DSN)
    try:
        before = await conn.fetchval(f'SELECT body FROM "{schema}".audit WHERE seq = $1', seq)
        if body is not None:
            await conn.execute(f'UPDATE "{schema}".audit SET body = $2 WHERE seq = $1', seq, body)
    finally:
        await conn.close()
    return str(before)


async def test_verify_recomputes_the_shared_chain_and_names_a_changed_entry(
    cluster: Cluster,
) -> None:
    caller = marker("agent:verified")
    await cluster.b.gateway.call_tool("e__echo", {"text": "v"}, _as(caller, "s"))
    entry = next(e for e in await _audited(cluster.a, caller) if e["principal"] == caller)
    async with _operator(cluster.a) as api:
        good = (await api.get("/api/console/audit/verify")).json()
        original = await _tamper(cluster.schema, entry["seq"], None)
        await _tamper(cluster.schema, entry["seq"], original.replace(caller, "agent:someone"))
        try:
            bad = (await api.get("/api/console/audit/verify")).json()
        finally:
            await _tamper(cluster.schema, entry["seq"], original)
        again = (await api.get("/api/console/audit/verify")).json()
    assert good["ok"] is True
    assert good["entries"] >= entry["seq"]
    assert (bad["ok"], bad["first_bad_seq"]) == (False, entry["seq"])
    assert bad["problem"]
    assert again["ok"] is True


async def test_replay_decides_every_replicas_recorded_calls_again(cluster: Cluster) -> None:
    on_a, on_b = marker("agent:replay-a"), marker("agent:replay-b")
    await cluster.a.gateway.call_tool("e__echo", {"text": "ra"}, _as(on_a, "s"))
    await cluster.b.gateway.call_tool("e__echo", {"text": "rb"}, _as(on_b, "s"))
    items = await _audited(cluster.a, on_a, on_b)
    echoes = sum(1 for e in items if e["kind"] == "tool.call" and e["tool"] == "e__echo")
    async with _operator(cluster.b) as api:
        response = await api.post("/api/console/replay", json={"policy": CANDIDATE})
    assert response.status_code == 200, response.text
    report = response.json()
    (row,) = report["rows"]  # the changed rows only
    assert (row["tool"], row["old_effect"], row["new_effect"]) == ("e__echo", "allow", "deny")
    assert row["new_rule_id"] == "no-echo"
    assert row["count"] == echoes >= 2
    assert report["changed"] == row["count"]


async def test_sessions_show_every_replicas_sessions_with_labels_and_gates(
    cluster: Cluster,
) -> None:
    on_a, on_b = marker("agent:session-a"), marker("agent:session-b")
    await cluster.a.gateway.call_tool("e__echo", {"text": "x"}, _as(on_a, "s-a"))
    await cluster.b.gateway.call_tool("e__whoami", {}, _as(on_b, "s-b"))
    of_acme = CallContext(principal=Principal(id=marker("agent:acme"), tenant="acme"))
    await cluster.b.gateway.call_tool("e__whoami", {}, of_acme)
    async with _operator(cluster.a) as api:
        response = await api.get("/api/console/sessions")
    assert response.status_code == 200, response.text
    rows = {row["principal"]: row for row in response.json()["items"]}
    mine, theirs = rows[on_a], rows[on_b]  # B's session is not in A's memory
    assert of_acme.principal.id not in rows  # another tenant's, for its operators only
    async with _operator(cluster.a, ACME_TOKEN) as acme:
        rows_of_acme = (await acme.get("/api/console/sessions")).json()["items"]
    assert [row["principal"] for row in rows_of_acme] == [of_acme.principal.id]
    assert (mine["session"], mine["calls"]) == ("s-a", 1)
    assert (theirs["session"], theirs["calls"], theirs["labels"]) == ("s-b", 1, ["private"])
    gate = next(g for g in theirs["gates"] if g["tool"] == "e__weather")
    assert gate["locked"] is False
    assert [h["tool"] for h in theirs["history"]] == ["e__whoami"]
