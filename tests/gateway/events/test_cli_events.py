"""``lockgate events tail`` against a real gateway-like SSE server, as a subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import anyio
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp

from gateway.api.event_stream import bearer_authorizer, events_endpoint
from gateway.events import MASK, EventBus, SimpleDecision
from gateway.events.tool_events import tool_call, upstream_status
from toolsets import CallContext, Principal, ToolDef

Server = Callable[[ASGIApp], AbstractAsyncContextManager[str]]
TOOL = ToolDef(name="files__read", server="files", upstream_name="read")


def app_for(bus: EventBus) -> Starlette:
    endpoint = events_endpoint(bus, bearer_authorizer(["sub-token"]))
    return Starlette(routes=[Route("/api/events", endpoint)])


async def tail(base: str, *extra: str) -> anyio.abc.Process:
    command = [sys.executable, "-m", "gateway.cli.events", "events", "tail", "--url", base, *extra]
    return await anyio.open_process(command, env=os.environ | {"LOCKGATE_TOKEN": "sub-token"})


async def run_tail(http_server: Server, *extra: str) -> tuple[int, str, str]:
    bus = EventBus("urn:lockgate:gw")
    ctx = CallContext(principal=Principal(id="agent:ci"))
    with anyio.fail_after(60):
        async with (
            http_server(app_for(bus)) as base,
            await tail(base, "--types", "tool.*", "-n", "1", *extra) as process,
        ):
            await bus.wait_subscribers(1)
            bus.publish(upstream_status("files", "up"))  # filtered out by --types
            decision = SimpleDecision("allow", "read", ("args.token",))
            bus.publish(tool_call(TOOL, ctx, {"path": "a.txt", "token": "hunter2"}, decision))
            assert process.stdout is not None
            assert process.stderr is not None
            out = b"".join([chunk async for chunk in process.stdout])
            err = b"".join([chunk async for chunk in process.stderr])
            code = await process.wait()
    return code, out.decode(), err.decode()


async def test_tail_prints_readable_lines_without_secrets(http_server: Server) -> None:
    code, out, err = await run_tail(http_server)
    assert (code, err) == (0, "")
    assert "tool.call" in out
    assert "files__read" in out
    assert "allow/read" in out
    assert "hunter2" not in out
    assert MASK in out


async def test_tail_json_prints_cloudevents(http_server: Server) -> None:
    code, out, _ = await run_tail(http_server, "--json")
    event = json.loads(out)
    assert code == 0
    assert event["specversion"] == "1.0"
    assert event["source"] == "urn:lockgate:gw"
    assert event["data"]["args"] == {"path": "a.txt", "token": MASK}


async def test_tail_with_a_wrong_token_is_a_one_line_user_error(http_server: Server) -> None:
    bus = EventBus("gw")
    with anyio.fail_after(60):
        async with http_server(app_for(bus)) as base:
            command = [sys.executable, "-m", "gateway.cli.events", "events", "tail"]
            result = await anyio.run_process(
                [*command, "--url", base, "--token", "nope"], check=False
            )
    assert result.returncode == 2
    assert result.stderr.decode().count("\n") == 1
    assert "refused the token" in result.stderr.decode()
