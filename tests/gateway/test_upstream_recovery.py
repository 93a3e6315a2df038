"""Upstreams that go away and come back: an HTTP upstream restarted mid-run (a 2025-11-25 one
answers 404 to its old session) is used again, a down one is a clear error result meanwhile, and
a stdio upstream that dies while idle is noticed at once."""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

import anyio
import pytest
from gateway_faces import (
    HTTP_FACES,
    MODERN,
    Face,
    echo_over,
    open_client,
    running,
    serve_gateway,
    text_of,
)
from mcp import Client
from support import echo_upstream, write_config

from gateway.gateway import Gateway
from tests.gateway.test_lifecycle import processes_with
from tests.gateway.test_list_changed import Notifications
from toolsets.errors import UpstreamError


async def until_up(gateway: Gateway, server: str) -> None:
    """Wait for the upstream's next successful connection (it retries with backoff)."""
    with anyio.fail_after(20):
        async with gateway.events.subscribe(["upstream.status"]) as statuses:
            if gateway.upstreams[server].status == "up":  # checked once subscribed: no gap
                return
            async for event in statuses:
                if event.data["server"] == server and event.data["status"] == "up":
                    return


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_an_http_upstream_restarted_mid_run_is_used_again(tmp_path: Path, era: str) -> None:
    # A 2025-11-25 upstream answers 404 to the session it no longer knows: the gateway opens a
    # new session and sends the call again (the 404 means it was not delivered).
    argv, port, url = echo_over("http", era=era, name="web")
    config = write_config(tmp_path, [{"name": "web", "transport": "http", "url": url}])
    async with Gateway.from_config(config) as gateway:
        async with running([(argv, port)], crash=True):
            await until_up(gateway, "web")
            first = await gateway.call_tool("web__echo", {"text": "before"})
        async with running([(argv, port)]):
            with anyio.fail_after(20):
                again = await gateway.call_tool("web__echo", {"text": "after"})
        with pytest.raises(UpstreamError, match="'web'"):
            await gateway.call_tool("web__echo", {"text": "while down"})
    assert text_of(first) == "before"
    assert text_of(again) == "after"


async def test_a_stdio_upstream_that_dies_while_idle_is_noticed_at_once(tmp_path: Path) -> None:
    marker = f"idle-{uuid.uuid4().hex}"
    upstream = echo_upstream("echo")
    upstream["args"] = [*upstream["args"], "--name", marker]
    config = write_config(tmp_path, [upstream])
    async with Gateway.from_config(config) as gateway:
        await until_up(gateway, "echo")
        async with gateway.events.subscribe(["upstream.status"]) as statuses:
            (pid,) = processes_with(marker)
            os.kill(pid, signal.SIGKILL)
            with anyio.fail_after(30):  # no call is made: the gateway notices by itself
                async for event in statuses:
                    if event.data["status"] != "up":
                        break
        assert gateway.upstreams["echo"].status != "up"
        await until_up(gateway, "echo")  # and it comes back
        again = await gateway.call_tool("echo__echo", {"text": "back"})
    assert text_of(again) == "back"


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_an_upstream_that_comes_up_later_joins_with_list_changed(
    tmp_path: Path, face: Face
) -> None:
    argv, port, url = echo_over("http", name="late")
    servers = [{"name": "late", "transport": "http", "url": url}]
    config = write_config(tmp_path, servers, startup_wait=0.5)
    notifications = Notifications()
    async with (
        serve_gateway(config) as gateway_url,
        open_client(face, config=config, url=gateway_url, message_handler=notifications) as client,
        contextlib.AsyncExitStack() as stack,
    ):
        before = await listed(client)
        changes = None
        if client.protocol_version == MODERN:
            changes = await stack.enter_async_context(client.listen(tools_list_changed=True))
        async with running([(argv, port)], crash=True):
            with anyio.fail_after(20):  # told, then listed: no polling
                while True:
                    notifications.changed = anyio.Event()
                    if "late__echo" in (after := await listed(client)):
                        break
                    if changes is not None:
                        await anext(aiter(changes))
                    else:
                        await notifications.changed.wait()
            echoed = await client.call_tool("late__echo", {"text": "joined"})
    assert before == set()
    assert "late__echo" in after
    assert text_of(echoed) == "joined"


async def listed(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}
