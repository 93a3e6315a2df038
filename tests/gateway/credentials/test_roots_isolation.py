"""The roots isolation probe: the published ``@modelcontextprotocol/server-everything`` keeps
the roots a client sent per upstream session (its ``get-roots-list`` tool answers them). Two
agents behind the gateway each send their own roots; the second must never be shown the first's.
A server whose config relays ``roots`` gets one upstream session per principal (``sessions``),
so each sees their own, in both MCP eras over HTTP.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from npm_support import npm_bin, npm_package
from support import MODES, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.wiring.checks import load_config
from toolsets._sdk_compat import create_mcp_http_client
from toolsets.errors import ConfigError

EVERYTHING = "@modelcontextprotocol/server-everything"
TOKENS = {"agent:alice": "alice-roots-token", "agent:bob": "bob-roots-token"}
ROOTS = {"agent:alice": "file:///home/alice/secret-project", "agent:bob": "file:///home/bob/src"}


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server-everything's stdio entry point, installed from the npm registry."""
    return npm_bin(npm_package(tmp_path_factory, EVERYTHING), "mcp-server-everything")


def _config(tmp_path: Path, everything: Path) -> Path:
    entry = {
        "name": "everything",
        "transport": "stdio",
        "command": shutil.which("node") or "node",
        "args": [str(everything), "stdio"],
        "client_requests": ["roots"],
    }
    agents = [{"id": who, "token": token} for who, token in TOKENS.items()]
    return write_config(
        tmp_path, [entry], auth={"agents": agents}, policies={"default_effect": "allow"}
    )


@contextlib.asynccontextmanager
async def _client(url: str, mode: str, who: str) -> AsyncIterator[Client]:
    """``who``'s MCP client on the gateway, declaring roots and answering with their own."""

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=ROOTS[who], name=who)])

    http = create_mcp_http_client(
        headers={"Authorization": f"Bearer {TOKENS[who]}"}, timeout=httpx2.Timeout(30, read=60)
    )
    async with http:
        transport: Any = streamable_http_client(url, http_client=http)
        async with Client(
            transport, mode=mode, read_timeout_seconds=60, list_roots_callback=roots
        ) as client:
            yield client


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_a_clients_roots_never_reach_another_client_of_a_server_that_keeps_them(
    everything: Path, tmp_path: Path, mode: str
) -> None:
    gateway = Gateway.from_config(_config(tmp_path, everything))
    with anyio.fail_after(120):
        async with serve_asgi(build_app(gateway)) as base:
            assert await gateway.wait_ready(60)  # node starts slowly on a busy machine
            url = f"{base}/mcp"
            async with _client(url, mode, "agent:alice") as alice:
                first = _text(await alice.call_tool("everything__get-roots-list", {}))
            async with _client(url, mode, "agent:bob") as bob:
                second = _text(await bob.call_tool("everything__get-roots-list", {}))
    assert ROOTS["agent:alice"] in first
    assert ROOTS["agent:alice"] not in second  # today's leak: bob was shown alice's roots
    assert ROOTS["agent:bob"] in second


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        pytest.param(
            {"client_requests": ["roots"]},
            "relaying roots needs sessions: per_principal",
            id="roots-on-a-shared-session",
        ),
        pytest.param(
            {"credentials": {"mode": "secret", "env": "TOKEN"}},
            "credentials mode 'secret' needs sessions: per_principal",
            id="secret-on-a-shared-session",
        ),
    ],
)
def test_a_shared_session_is_refused_where_state_of_one_caller_would_reach_another(
    tmp_path: Path, extra: dict[str, Any], problem: str
) -> None:
    entry = {"name": "local", "command": "true", "sessions": "shared", **extra}
    config = write_config(tmp_path, [entry])
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    found = [(i.key, i.message) for i in raised.value.issues]
    assert [key for key, _ in found] == ["servers.0"]
    assert problem in found[0][1]
