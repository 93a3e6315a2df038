"""``GET /api/events`` under real uvicorn, read with httpx2's SSE client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import httpx2
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp

from gateway.api.event_stream import bearer_authorizer, events_endpoint
from gateway.events import RESET, Event, EventBus

Server = Callable[[ASGIApp], AbstractAsyncContextManager[str]]
AUTH = {"Authorization": "Bearer sub-token"}


def app_for(bus: EventBus, keepalive: float = 30.0) -> Starlette:
    endpoint = events_endpoint(bus, bearer_authorizer(["sub-token"]), keepalive=keepalive)
    return Starlette(routes=[Route("/api/events", endpoint)])


@asynccontextmanager
async def sse(
    url: str, headers: dict[str, str]
) -> AsyncIterator[AsyncIterator[httpx2.ServerSentEvent]]:
    """An open event stream, positioned after the server's first message (``retry:``)."""
    async with (
        httpx2.AsyncClient(timeout=10) as client,
        client.stream("GET", url, headers=headers) as response,
    ):
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
        events = aiter(httpx2.EventSource(response))
        hello = await anext(events)
        assert hello.retry == 3000  # sent once the subscription exists
        yield events


def published(bus: EventBus, *types: str) -> list[Event]:
    return [bus.publish(Event(type=t, data={"n": n})) for n, t in enumerate(types)]


async def test_subscriber_receives_live_events_of_the_requested_types(http_server: Server) -> None:
    bus = EventBus("urn:lockgate:gw")
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base:
            url = f"{base}/api/events?types=tool.*,upstream.*"
            async with sse(url, AUTH) as events:
                sent = published(bus, "tool.call", "tools.changed", "upstream.status")
                first, second = await anext(events), await anext(events)
    assert [(first.event, first.id), (second.event, second.id)] == [
        ("tool.call", sent[0].id),
        ("upstream.status", sent[2].id),
    ]
    assert first.json() == sent[0].to_cloudevent() | {"source": "urn:lockgate:gw"}


async def test_last_event_id_replays_what_was_missed(http_server: Server) -> None:
    bus = EventBus("gw")
    before = published(bus, "tool.call", "tool.result", "tool.call", "tool.result")
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base:
            headers = AUTH | {"Last-Event-ID": before[1].id}
            async with sse(f"{base}/api/events?types=tool.call", headers) as events:
                replayed = await anext(events)
                live = published(bus, "tool.result", "tool.call")
                after = await anext(events)
    assert replayed.id == before[2].id
    assert after.id == live[1].id


async def test_an_id_older_than_the_ring_gets_a_reset_event(http_server: Server) -> None:
    bus = EventBus("gw", ring_size=2)
    before = published(bus, *["tool.call"] * 5)
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base:
            headers = AUTH | {"Last-Event-ID": before[0].id}
            async with sse(f"{base}/api/events", headers) as events:
                reset = await anext(events)
                live = published(bus, "tool.call")
                after = await anext(events)
    assert reset.event == RESET
    assert reset.id == ""  # control events carry no id, so the client keeps its last real one
    assert reset.json()["data"]["last_event_id"] == before[0].id  # type: ignore[index]
    assert after.id == live[0].id


async def test_requests_without_a_valid_token_are_refused(http_server: Server) -> None:
    bus = EventBus("gw")
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base, httpx2.AsyncClient() as client:
            missing = await client.get(f"{base}/api/events")
            wrong = await client.get(f"{base}/api/events", headers={"Authorization": "Bearer x"})
            bad = await client.get(f"{base}/api/events?types=a%20b", headers=AUTH)
    assert (missing.status_code, wrong.status_code, bad.status_code) == (401, 401, 400)
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert bus.subscriber_count == 0


async def test_idle_streams_get_keep_alive_comments(http_server: Server) -> None:
    bus = EventBus("gw")
    with anyio.fail_after(30):
        async with (
            http_server(app_for(bus, keepalive=0.05)) as base,
            httpx2.AsyncClient() as client,
            client.stream("GET", f"{base}/api/events", headers=AUTH) as response,
        ):
            lines = aiter(response.aiter_lines())
            while await anext(lines) != ": keep-alive":
                pass


async def test_a_disconnecting_client_frees_its_subscription(http_server: Server) -> None:
    bus = EventBus("gw")
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base:
            async with sse(f"{base}/api/events", AUTH):
                assert bus.subscriber_count == 1
            await bus.wait_subscribers(0)


async def test_closing_the_bus_ends_streams_so_the_server_can_stop(http_server: Server) -> None:
    bus = EventBus("gw")
    with anyio.fail_after(30):
        async with http_server(app_for(bus)) as base, sse(f"{base}/api/events", AUTH) as events:
            published(bus, "tool.call")
            bus.close()
            rest = [e.event async for e in events]
            await bus.wait_subscribers(0)
    assert rest == ["tool.call"]
