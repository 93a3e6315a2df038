"""Helpers of the surface suite: its upstreams, a gateway served with its `Gateway` at hand,
what a client hears, and subscribing in either era.

Imported by module name (``import surface_support``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from paths import HARNESS
from support import STARTUP_WAIT as SHARED_STARTUP_WAIT
from support import echo_upstream, free_port, serve_asgi

from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

UPSTREAMS = ("dual", "old", "new")
"""The echo upstreams: dual-era (spoken to in 2026-07-28), legacy-only, modern-only."""
ITEMS = 120
"""Extra resources of ``dual``: more than one page (100) on their own."""
FAULTY_SERVER = str(HARNESS / "upstreams" / "faulty_server.py")
STRICT_SERVER = str(HARNESS / "upstreams" / "strict_server.py")
MODERN = "2026-07-28"
STARTUP_WAIT = SHARED_STARTUP_WAIT
"""`support.STARTUP_WAIT`, which the suites import from here too."""


def surface_servers() -> list[dict[str, Any]]:
    """The suite's upstreams: see the ``surface_config`` fixture."""
    dual = echo_upstream("dual")
    dual["args"] += ["--resources", str(ITEMS)]
    bare = {
        "name": "bare",
        "transport": "stdio",
        "command": sys.executable,
        "args": [FAULTY_SERVER],
    }
    ghost = {"name": "ghost", "transport": "http", "url": f"http://127.0.0.1:{free_port()}/mcp"}
    old, new = echo_upstream("old", era="legacy"), echo_upstream("new", era="modern")
    return [dual, old, new, bare, ghost]


def uri(prefix: str, own: str) -> str:
    """The gateway URI of upstream ``prefix``'s own ``own``."""
    return f"lockgate://{prefix}/{own}"


@dataclass(frozen=True)
class Served:
    """A gateway served over streamable HTTP: its /mcp URL and the gateway itself."""

    url: str
    gateway: Gateway


@contextlib.asynccontextmanager
async def serve_surface(config: Path) -> AsyncIterator[Served]:
    """``lockgate serve`` in-process, keeping hold of the `Gateway`."""
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base:
        yield Served(f"{base}/mcp", gateway)


class Heard:
    """A message handler recording resource updates (by URI) and list changes (by kind)."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.changed: list[str] = []
        self._news = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
        elif isinstance(message, types.ResourceListChangedNotification):
            self.changed.append("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self.changed.append("prompts")
        else:
            return
        self._news.set()
        self._news = anyio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (at most 30 s) until ``condition()`` holds, checking after each notification."""
        with anyio.fail_after(30):
            while not condition():
                await self._news.wait()


@contextlib.asynccontextmanager
async def listening(client: Client, uris: Sequence[str] = ()) -> AsyncIterator[list[str]]:
    """Subscribed to ``uris`` (and, 2026-07-28, to list changes) while inside; yields the URIs
    held: a 2025-11-25 client sends ``resources/subscribe``, a 2026-07-28 one opens a
    ``subscriptions/listen`` stream (whose acknowledgment says what it holds)."""
    if client.protocol_version == MODERN:
        opened = client.listen(
            resources_list_changed=True, prompts_list_changed=True, resource_subscriptions=uris
        )
        async with opened as subscription:
            yield list(subscription.honored.resource_subscriptions or ())
        return
    for each in uris:
        await subscribe(client, each)
    try:
        yield list(uris)
    finally:
        for each in uris:
            await subscribe(client, each, on=False)


async def subscribe(client: Client, resource: str, *, on: bool = True) -> None:
    """2025-11-25 ``resources/subscribe`` (or, ``on=False``, unsubscribe) of ``resource``."""
    request: types.SubscribeRequest | types.UnsubscribeRequest
    if on:
        request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=resource))
    else:
        request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=resource))
    await client.session.send_request(request, types.EmptyResult)


async def read_text(client: Client, resource: str) -> str:
    """The text of the first content of ``resource``, read through the gateway."""
    contents = (await client.read_resource(resource)).contents
    assert isinstance(contents[0], types.TextResourceContents)
    return contents[0].text


async def until(condition: Callable[[], bool]) -> None:
    """Wait (at most 30 s) until ``condition()`` holds, letting every other task run between
    checks (for state the gateway changes after a client went away)."""
    with anyio.fail_after(30):
        while not condition():
            await anyio.wait_all_tasks_blocked()


async def all_resources(client: Client) -> list[types.Resource]:
    """Every resource the gateway lists, page after page."""
    resources: list[types.Resource] = []
    cursor: str | None = None
    while True:
        page = await client.list_resources(cursor=cursor)
        resources += page.resources
        cursor = page.next_cursor
        if cursor is None:
            return resources


def pid_of(marker: str) -> int:
    """The id of the one process whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
    [pid] = found
    return pid


async def refused(attempt: Awaitable[Any]) -> types.ErrorData:
    """The JSON-RPC error ``attempt`` fails with."""
    with pytest.raises(MCPError) as caught:
        await attempt
    return caught.value.error


async def next_event(events: Subscription, **expected: Any) -> Event:
    """The next event whose data has every ``expected`` value (others are skipped)."""
    with anyio.fail_after(20):
        async for event in events:
            if all(event.data.get(key) == value for key, value in expected.items()):
                return event
    raise AssertionError("the event stream ended")
