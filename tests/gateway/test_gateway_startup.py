"""Startup: a name collision is refused; dead or mute upstreams block neither start-up nor the
others."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from gateway_faces import ECHO_TOOLS, HTTP_FACES, Face, lockgate, text_of
from mcp import Client
from support import echo_upstream, write_config

from gateway.gateway import Gateway
from toolsets.errors import ToolCollisionError
from toolsets.functions.toolset import FunctionTool, FunctionToolset

DEAD = {
    "name": "dead",
    "command": sys.executable,
    "args": ["-c", "import sys; sys.exit(1)"],
    "connect_timeout": 2,
}
MUTE = {
    "name": "mute",
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stdin.read()"],
    "connect_timeout": 1,
}


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working upstream between one that exits at once and one that never answers."""
    servers = [DEAD, echo_upstream("echo"), MUTE]
    return write_config(tmp_path_factory.mktemp("startup"), servers)


def _shadow_echo() -> str:
    """A local tool that happens to be named like an upstream tool."""
    return "shadow"


async def test_a_local_tool_colliding_with_an_upstream_tool_refuses_the_first_catalogue(
    tmp_path: Path,
) -> None:
    # The gateway serves before its upstreams are up; the first listing, which waits for them,
    # refuses a catalogue with a collision (as `lockgate tools` does, below).
    config = write_config(tmp_path, [echo_upstream("echo")])
    local = FunctionToolset([FunctionTool(_shadow_echo, name="echo__echo")], server="local")

    async with Gateway.from_config(config, toolsets=[local]) as gateway:
        with pytest.raises(ToolCollisionError) as caught:
            await gateway.list_tools()

    assert str(caught.value) == (
        "Tool name collision: 'echo__echo' is exposed by both server 'echo' and server 'local'"
    )


def test_an_external_tool_colliding_with_an_upstream_tool_fails_the_cli(tmp_path: Path) -> None:
    external = [{"name": "echo__whoami", "description": "shadows the upstream"}]
    config = write_config(tmp_path, [echo_upstream("echo")], external_tools=external)

    run = lockgate("tools", "--config", str(config))

    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines()[-1] == (
        "lockgate: error: Tool name collision: 'echo__whoami' is exposed by both server 'echo'"
        " and server 'external'"
    )


async def test_a_dead_and_a_mute_upstream_do_not_stop_the_gateway(gateway_config: Path) -> None:
    with anyio.fail_after(30):
        async with Gateway.from_config(gateway_config) as gateway:
            tools = {tool.name for tool in await gateway.list_tools()}
            result = await gateway.call_tool("echo__echo", {"text": "still here"})
            health = gateway.health()

    assert tools == {f"echo__{name}" for name in ECHO_TOOLS}
    assert text_of(result) == "still here"
    assert health["status"] == "degraded"
    assert health["servers"]["echo"]["status"] == "up"
    assert health["servers"]["dead"]["status"] in {"down", "reconnecting"}
    assert health["servers"]["mute"]["status"] in {"down", "reconnecting"}
    assert "within 1 s" in health["servers"]["mute"]["detail"]


@pytest.fixture(scope="module", params=HTTP_FACES)
def face(request: pytest.FixtureRequest) -> Face:
    face: Face = request.param
    return face


async def test_clients_of_both_eras_use_the_live_upstream(client: Client) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    result = await client.call_tool("echo__echo", {"text": "through"})

    assert listed == {f"echo__{name}" for name in ECHO_TOOLS}
    assert text_of(result) == "through"


async def test_healthz_reports_each_upstream_and_a_dead_one_as_not_up(gateway_url: str) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(gateway_url.removesuffix("/mcp") + "/healthz")

    body = response.json()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert body["status"] == "degraded"
    assert set(body["servers"]) == {"dead", "echo", "mute"}
    assert body["servers"]["echo"] == {
        "status": "up",
        "detail": "protocol 2026-07-28",
        "protocol": "2026-07-28",
        "tools": len(ECHO_TOOLS),
    }
    assert body["servers"]["dead"]["status"] != "up"
    assert body["servers"]["mute"]["status"] != "up"


class _Refusals(logging.Handler):
    """Sets ``seen`` when the gateway logs that it refused a catalogue change."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "refused" in record.getMessage():
            self.seen.set()


@pytest.fixture
def refusals() -> Iterator[_Refusals]:
    handler = _Refusals()
    logger = logging.getLogger("lockgate")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


async def test_a_tool_added_upstream_that_collides_is_refused_and_the_rest_keeps_working(
    tmp_path: Path, refusals: _Refusals
) -> None:
    config = write_config(
        tmp_path, [echo_upstream("echo")], external_tools=[{"name": "echo__extra_1"}]
    )
    async with Gateway.from_config(config) as gateway:
        before = {tool.name for tool in await gateway.list_tools()}
        added = await gateway.call_tool("echo__add_tool", {})
        with anyio.fail_after(30):
            await refusals.seen.wait()
        after = {tool.name for tool in await gateway.list_tools()}
        echoed = await gateway.call_tool("echo__echo", {"text": "ok"})

    assert text_of(added) == "extra_1"
    assert after == before
    assert text_of(echoed) == "ok"
