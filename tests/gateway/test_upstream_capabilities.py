"""The gateway declares to an upstream only the client capabilities whose requests its config
relays (``client_requests``): a 2025-11-25 upstream reads them in ``initialize``, a 2026-07-28
one in each request's ``_meta``; so a server that adds tools for what a client can answer adds
none that would fail on every call.

``@modelcontextprotocol/server-everything`` is installed from the npm registry into the test's
tmp folder (with its own npm cache there; about 5 s); the test is skipped only without npm.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import Face, open_client, serve_gateway, text_of
from npm_support import npm_bin, npm_package
from paths import HARNESS
from support import write_config

from gateway.gateway import Gateway

CAPS_SERVER = str(HARNESS / "upstreams" / "caps_server.py")
EVERYTHING = "@modelcontextprotocol/server-everything"
RELAYED = [
    pytest.param([], id="none"),
    pytest.param(["sampling"], id="sampling"),
    pytest.param(["elicitation", "roots"], id="elicitation-roots"),
]
NEEDS = {
    "get-roots-list": "roots",
    "trigger-elicitation-request": "elicitation",
    "trigger-sampling-request": "sampling",
    "trigger-url-elicitation": "elicitation",
}
"""server-everything's tools that it lists only to a client declaring the capability."""


def caps_upstream(era: str, relayed: list[str]) -> dict[str, Any]:
    """Config entry for the capabilities test server over stdio, relaying ``relayed``."""
    args = [CAPS_SERVER, "--era", era, "--name", "caps"]
    return {
        "name": "caps",
        "transport": "stdio",
        "command": sys.executable,
        "args": args,
        "client_requests": relayed,
    }


async def no_progress(progress: float, total: float | None, message: str | None) -> None:
    """A progress callback: the call then goes through the upstream's SDK session."""


@pytest.mark.parametrize("relayed", RELAYED)
@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_upstream_sees_exactly_the_capabilities_its_config_relays(
    tmp_path: Path, era: str, relayed: list[str]
) -> None:
    config = write_config(tmp_path, [caps_upstream(era, relayed)])
    with anyio.fail_after(60):
        async with (
            serve_gateway(config) as url,
            open_client(Face("http", "legacy"), config=config, url=url) as client,
        ):
            piped = await client.call_tool("caps__client_capabilities", {})
            session = await client.call_tool(
                "caps__client_capabilities", {}, progress_callback=no_progress
            )
            greet = await client.call_tool("caps__greet", {"question": "Who?"})
    assert json.loads(text_of(piped)) == sorted(relayed)
    assert json.loads(text_of(session)) == sorted(relayed)
    assert greet.is_error
    if "elicitation" not in relayed:  # the server's refusal, told as the config's doing
        assert "lockgate did not relay 'elicitation/create' from server 'caps'" in text_of(greet)
        reason = "elicitation is not enabled for this server (client_requests in its config)"
        assert reason in text_of(greet)


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server-everything's stdio entry point, installed from the npm registry."""
    return npm_bin(npm_package(tmp_path_factory, EVERYTHING), "mcp-server-everything")


@pytest.mark.parametrize(
    "relayed",
    [*RELAYED, pytest.param(["elicitation", "roots", "sampling"], id="all")],
)
async def test_server_everything_lists_the_tools_that_ask_the_client_only_when_relayed(
    everything: Path, tmp_path: Path, relayed: list[str]
) -> None:
    node = shutil.which("node") or "node"
    entry = {
        "name": "everything",
        "transport": "stdio",
        "command": node,
        "args": [str(everything), "stdio"],
        "client_requests": relayed,
    }
    config = write_config(tmp_path, [entry])
    with anyio.fail_after(60):
        async with Gateway.from_config(config) as gateway:
            names = set(await gateway.tools())
    expected = {f"everything__{tool}" for tool, needs in NEEDS.items() if needs in relayed}
    asking = {f"everything__{tool}" for tool in NEEDS}
    assert "everything__echo" in names  # the server is up and listed
    assert names & asking == expected
