"""Live event streams of a served gateway: SSE at ``/api/events`` (tokens, live events,
``Last-Event-ID`` replay), a subscriber that never reads (gap marker, calls unaffected), and the
Prometheus metrics after real traffic.

The gateway runs in this process under uvicorn; calls come from real `mcp.Client`s over HTTP.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from events_e2e_support import (
    AGENT_TOKEN,
    DENIED_TOOL,
    ECHO,
    SUBSCRIBER_TOKEN,
    BusReader,
    Served,
    api,
    e2e_config,
    envelope,
    http_client,
    served,
)
from prometheus_client.parser import text_string_to_metric_families
from support import MODES

from gateway.audit.log import read_tail
from gateway.events.model import GAP

both_eras = pytest.mark.parametrize("mode", MODES)


@contextlib.asynccontextmanager
async def sse(
    base: str, token: str, *, types: str = "tool.*", last_id: str | None = None
) -> AsyncIterator[AsyncIterator[httpx2.ServerSentEvent]]:
    """``GET /api/events`` as the holder of ``token``, past the first message (``retry:``).

    The gateway sends that first message once the subscription exists, so every event published
    after this returns is on the stream.
    """
    headers = {"Last-Event-ID": last_id} if last_id else {}
    async with (
        api(base, token) as client,
        client.stream("GET", "/api/events", params={"types": types}, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = aiter(httpx2.EventSource(response))
        hello = await anext(events)
        assert hello.retry is not None
        yield events


async def take(
    events: AsyncIterator[httpx2.ServerSentEvent], n: int
) -> list[httpx2.ServerSentEvent]:
    return [await anext(events) for _ in range(n)]


@both_eras
async def test_sse_streams_live_call_events_and_replays_what_a_reconnecting_client_missed(
    rig: Served, mode: str
) -> None:
    async with (
        rig.gateway.events.subscribe(["*"], name="reference") as everything,
        http_client(rig.mcp_url, mode) as client,
    ):
        reference = BusReader(everything)
        with anyio.fail_after(20):
            async with sse(rig.base, SUBSCRIBER_TOKEN) as stream:
                await client.call_tool(ECHO, {"text": "one"})
                live = await take(stream, 2)
            # Disconnected: these two events are only in the replay ring.
            await client.call_tool(ECHO, {"text": "two"})
            async with sse(rig.base, SUBSCRIBER_TOKEN, last_id=live[-1].id) as stream:
                replayed = await take(stream, 2)
                await client.call_tool(ECHO, {"text": "three"})
                after = await take(stream, 2)
            for _ in range(3):
                await reference.until_result()

    published = [e for e in reference.events if e.type.startswith("tool.")]
    assert [m.event for m in live + replayed + after] == ["tool.call", "tool.result"] * 3
    # Replay resumes right after the last id seen: no duplicate, no hole, then live again.
    assert [m.id for m in live + replayed + after] == [e.id for e in published]
    assert [m.json() for m in live + replayed + after] == [envelope(e) for e in published]
    texts = [m.json()["data"]["args"]["text"] for m in live + replayed + after if "args" in m.data]
    assert texts == ["one", "two", "three"]


async def test_sse_only_streams_the_requested_types(rig: Served) -> None:
    async with (
        rig.gateway.events.subscribe(["tools.changed"], name="changes") as changes,
        http_client(rig.mcp_url, "auto") as client,
    ):
        with anyio.fail_after(20):
            async with sse(rig.base, SUBSCRIBER_TOKEN, types="tool.*") as stream:
                await client.call_tool("vault__add_tool", {})
                await anext(aiter(changes))  # tools.changed was published meanwhile
                await client.call_tool(ECHO, {"text": "after the change"})
                seen = await take(stream, 4)
    assert [(m.event, m.json()["data"]["tool"]) for m in seen] == [
        ("tool.call", "vault__add_tool"),
        ("tool.result", "vault__add_tool"),
        ("tool.call", ECHO),
        ("tool.result", ECHO),
    ]


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(AGENT_TOKEN, id="agent-token"),
        pytest.param(None, id="no-token"),
        pytest.param("not-a-token", id="unknown-token"),
    ],
)
async def test_sse_refuses_agents_with_403_and_anonymous_callers_with_401(
    rig: Served, token: str | None
) -> None:
    with anyio.fail_after(30):
        async with api(rig.base, token) as client:
            response = await client.get("/api/events", params={"types": "tool.*"})
    if token == AGENT_TOKEN:  # authenticated, but not a subscriber
        assert response.status_code == 403
    else:
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_subscriber_that_never_reads_does_not_hold_calls_and_later_sees_a_gap(
    rig: Served,
) -> None:
    async with (
        rig.gateway.events.subscribe(["tool.*"], buffer=4, name="e2e-stalled") as stalled,
        rig.gateway.events.subscribe(["tool.*"], name="e2e-reader") as reader_sub,
        http_client(rig.mcp_url, "auto") as client,
    ):
        reader = BusReader(reader_sub)
        # A publish that waited for the stalled subscriber would hang the fifth call for good.
        with anyio.fail_after(20):
            for n in range(20):
                result = await client.call_tool(ECHO, {"text": f"call {n}"})
                assert not result.is_error
            for _ in range(20):
                await reader.until_result()
            kept = [await anext(stalled) for _ in range(5)]
            await client.call_tool(ECHO, {"text": "after the gap"})
            resumed = [await anext(stalled) for _ in range(2)]
        async with api(rig.base, None) as http:
            metrics = (await http.get("/metrics")).text

    assert len(reader.events) == 40  # an attentive subscriber lost nothing
    assert [e.id for e in kept[:4]] == [e.id for e in reader.events[:4]]
    assert kept[4].type == GAP
    assert kept[4].data["missed"] == 36
    assert [e.type for e in resumed] == ["tool.call", "tool.result"]
    assert resumed[0].data["args"] == {"text": "after the gap"}
    assert sample(metrics, "lockgate_events_dropped_total", subscriber="e2e-stalled") == 36


async def test_a_recorded_denial_is_audited_as_the_envelope_subscribers_received(
    rig: Served,
) -> None:
    config = rig.gateway.config
    async with (
        rig.gateway.events.subscribe(["tool.denied"], name="denials") as denials,
        http_client(rig.mcp_url, "auto") as client,
    ):
        with anyio.fail_after(20):
            await client.call_tool(DENIED_TOOL, {"path": "/vault/c"})
            denied = await anext(aiter(denials))
    (entry,) = [
        e
        for e in read_tail(config.resolve(config.events.audit.path), 100)
        if e.event_id == denied.id
    ]
    assert denied.source == "lockgate"
    assert entry.body == envelope(denied)


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of sample ``name`` with exactly ``labels`` in a Prometheus text exposition."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


async def test_metrics_count_calls_by_tool_effect_and_outcome_and_pending_approvals(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with served(e2e_config(tmp_path)) as fresh:
            async with http_client(fresh.mcp_url, "legacy") as client:
                for text in ("a", "b"):
                    assert not (await client.call_tool(ECHO, {"text": text})).is_error
                assert (await client.call_tool("vault__fail", {"message": "boom"})).is_error
                assert (await client.call_tool(DENIED_TOOL, {"path": "/x"})).is_error
                held = await client.call_tool("vault__big", {"kib": 1})  # ask: held, then pending
            async with api(fresh.base, None) as http:
                response = await http.get("/metrics")
    assert response.status_code == 200
    text = response.text
    assert held.meta is not None
    assert "lockgate/pending" in held.meta
    calls = "lockgate_tool_calls_total"
    assert sample(text, calls, tool=ECHO, effect="allow", outcome="ok") == 2
    assert sample(text, calls, tool="vault__fail", effect="allow", outcome="error") == 1
    assert sample(text, calls, tool=DENIED_TOOL, effect="deny", outcome="denied") == 1
    assert sample(text, "lockgate_pending_approvals") == 1
    assert sample(text, "lockgate_tool_call_duration_seconds_count", tool=ECHO) == 2
    assert sample(text, "lockgate_upstream_up", server="vault") == 1
    assert sample(text, "lockgate_events_published_total", type="tool.denied") == 1
