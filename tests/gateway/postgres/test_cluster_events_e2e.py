"""Two ``lockgate serve`` replicas on one schema publish one event stream: an SSE subscriber on
either sees both replicas' events in the same order and resumes on the other with
``Last-Event-ID``; a webhook gets each event once; the audit chain they share verifies."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from approvals_e2e_support import marker
from events_e2e_support import WEBHOOK_SECRET, WebhookReceiver, watching, webhook_receiver
from pg_e2e_support import BUDGET_TOOL, Replicas, replica, replica_config, session_client

SUBSCRIBER_TOKEN = "cluster-subscriber-token"


@pytest.fixture(scope="module")
async def cluster(
    tmp_path_factory: pytest.TempPathFactory, schema: str
) -> AsyncIterator[tuple[Replicas, WebhookReceiver]]:
    """Replicas ``a`` and ``b`` delivering ``tool.call`` events to one webhook receiver."""
    directory = tmp_path_factory.mktemp("cluster")
    async with webhook_receiver() as (receiver, url):
        config = replica_config(directory, schema)
        body = yaml.safe_load(config.read_text(encoding="utf-8"))
        hook = {"url": url, "secret": WEBHOOK_SECRET, "allow_private": True}
        body["events"] = {"webhooks": [hook | {"events": ["tool.call"]}]}
        body["auth"]["subscribers"] = [{"id": "svc:events", "token": SUBSCRIBER_TOKEN}]
        config.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
        async with replica(config, "a") as a, replica(config, "b") as b:
            log = directory / "executions.jsonl"
            yield Replicas(a=a, b=b, config=config, log=log), receiver


async def call_on(url: str, value: str) -> None:
    async with session_client(url, "auto", session=value) as client:
        result = await client.call_tool(BUDGET_TOOL, {"value": value})
    assert not result.is_error, result


def calls_for(events: list[dict[str, Any]], values: set[str]) -> list[dict[str, Any]]:
    return [
        e
        for e in events
        if e["type"] == "tool.call" and e["data"].get("args", {}).get("value") in values
    ]


async def test_a_subscriber_on_b_sees_a_s_events_and_resumes_on_a_with_last_event_id(
    cluster: tuple[Replicas, WebhookReceiver],
) -> None:
    replicas, _ = cluster
    first, second = marker("on-a"), marker("on-b")
    with anyio.fail_after(60):
        async with watching(replicas.b.base, SUBSCRIBER_TOKEN) as on_b:
            async with watching(replicas.a.base, SUBSCRIBER_TOKEN) as on_a:
                await call_on(replicas.a.mcp_url, first)
                await call_on(replicas.b.mcp_url, second)
                wanted = {first, second}
                await on_a.until(lambda seen: len(calls_for(seen, wanted)) == 2)
                await on_b.until(lambda seen: len(calls_for(seen, wanted)) == 2)
            same = [e["id"] for e in on_a if e["id"] in {x["id"] for x in on_b}]
            assert same == [e["id"] for e in on_b if e["id"] in set(same)]
            resume_from = calls_for(on_b, {first})[0]["id"]
        replay = await replay_after(replicas.a.base, resume_from, through=second)
    assert second in {e["data"].get("args", {}).get("value") for e in replay}
    assert first not in {e["data"].get("args", {}).get("value") for e in replay}


async def replay_after(base: str, last_id: str, *, through: str) -> list[dict[str, Any]]:
    """What ``GET /api/events`` with ``Last-Event-ID`` replays on ``base``, up to the call of
    ``through`` (the replay is in order: an event it should not hold would come before)."""
    headers = {"Authorization": f"Bearer {SUBSCRIBER_TOKEN}", "Last-Event-ID": last_id}
    events: list[dict[str, Any]] = []
    async with (
        httpx2.AsyncClient(base_url=base, timeout=10) as http,
        http.stream("GET", "/api/events", headers=headers) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
                if calls_for(events[-1:], {through}):
                    break
    return events


async def test_each_event_reaches_the_webhook_once_whichever_replica_published_it(
    cluster: tuple[Replicas, WebhookReceiver],
) -> None:
    replicas, receiver = cluster
    values = {marker(f"hook-{n}") for n in range(6)}
    later = {marker("hook-later-a"), marker("hook-later-b")}
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n, value in enumerate(sorted(values)):
                tg.start_soon(call_on, (replicas.a, replicas.b)[n % 2].mcp_url, value)
        await receiver.until(lambda _e: len(calls_for(receiver.envelopes, values)) == 6)
        # Time for a duplicate, were there one, counted in events rather than seconds (it grows
        # with the machine's load): each replica delivers the events in order, so by the time
        # one more call on each has been delivered, a second delivery of the six has had the
        # time an event takes to go round.
        for side, value in zip((replicas.a, replicas.b), sorted(later), strict=True):
            await call_on(side.mcp_url, value)
        await receiver.until(lambda _e: len(calls_for(receiver.envelopes, later)) == 2)
    delivered = calls_for(receiver.envelopes, values)
    assert sorted(e["data"]["args"]["value"] for e in delivered) == sorted(values)
    assert len({e["id"] for e in delivered}) == 6


async def test_audit_verify_checks_the_chain_both_replicas_append_to(
    cluster: tuple[Replicas, WebhookReceiver],
) -> None:
    replicas, _ = cluster
    await call_on(replicas.a.mcp_url, marker("audited-a"))
    await call_on(replicas.b.mcp_url, marker("audited-b"))
    verified = await anyio.to_thread.run_sync(verify, replicas.config)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("ok: ")


def verify(config: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "gateway.cli", "audit", "verify", "--config", str(config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
