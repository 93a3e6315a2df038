"""`toolsets._sdk_compat`: the MCP SDK's private names, checked, and the helpers that read them.

The check runs against the installed SDK; its error path against stand-in modules shaped like
an SDK that moved a name. The session helpers run against a real streamable-HTTP server.
"""

from __future__ import annotations

import contextlib
import tomllib
from collections.abc import AsyncIterator
from importlib import import_module, metadata
from types import ModuleType
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import TextContent
from paths import REPO
from starlette.types import ASGIApp, Receive, Scope, Send
from support import MODES, serve_asgi

from toolsets import _sdk_compat
from toolsets._sdk_compat import (
    PRIVATE_NAMES,
    SUPPORTED_MCP,
    PrivateName,
    check_sdk,
    open_session,
    session_connection,
    session_owner,
)
from toolsets.errors import LockgateError

PYPROJECT = REPO / "pyproject.toml"
INSTALLED = f"mcp {metadata.version('mcp')}"
ADVICE = (
    f"supported: mcp {SUPPORTED_MCP} (pip install 'mcp{SUPPORTED_MCP}' 'mcp-types{SUPPORTED_MCP}')"
)
AGENT = AccessToken(token="", client_id="agent:compat", scopes=[])


def private(path: str) -> PrivateName:
    return next(p for p in PRIVATE_NAMES if p.path == path)


def test_the_installed_sdk_has_every_private_name_lockgate_relies_on() -> None:
    check_sdk()


@pytest.mark.parametrize("entry", [pytest.param(p, id=p.path) for p in PRIVATE_NAMES if p.public])
def test_each_reexport_is_the_sdks_own_object(entry: PrivateName) -> None:
    assert getattr(_sdk_compat, entry.public) is getattr(import_module(entry.module), entry.name)


def test_the_supported_range_is_the_one_pyproject_pins() -> None:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert f"mcp{SUPPORTED_MCP}" in dependencies
    assert f"mcp-types{SUPPORTED_MCP}" in dependencies


def _sync_get_executable_command(command: str) -> str:
    return command


async def _spawn_without_cwd(command: str, args: list[str], env: dict[str, str]) -> None:
    return None


class _ManagerWithoutOwners:
    def __init__(self) -> None:
        self._server_instances: dict[str, Any] = {}


def _module(name: str, **attributes: Any) -> ModuleType:
    module = ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


@pytest.mark.parametrize(
    ("path", "module", "problem"),
    [
        pytest.param(
            "mcp.client.stdio._stop_server_process",
            _module("mcp.client.stdio"),
            f", which {INSTALLED} does not have",
            id="function-removed",
        ),
        pytest.param(
            "mcp.client._transport.TransportStreams",
            None,
            f", which {INSTALLED} does not have",
            id="module-removed",
        ),
        pytest.param(
            "mcp.client.stdio._get_executable_command",
            _module("mcp.client.stdio", _get_executable_command=_sync_get_executable_command),
            f" as an async function, which in {INSTALLED} is a function",
            id="async-became-sync",
        ),
        pytest.param(
            "mcp.client.stdio._create_platform_compatible_process",
            _module("mcp.client.stdio", _create_platform_compatible_process=_spawn_without_cwd),
            f" with the parameter 'cwd', which {INSTALLED} does not take",
            id="keyword-removed",
        ),
        pytest.param(
            "mcp.server.streamable_http_manager.StreamableHTTPSessionManager._session_owners",
            _module(
                "mcp.server.streamable_http_manager",
                StreamableHTTPSessionManager=_ManagerWithoutOwners,
            ),
            f", which StreamableHTTPSessionManager.__init__ of {INSTALLED} does not set",
            id="attribute-removed",
        ),
    ],
)
def test_a_name_the_sdk_moved_is_named_with_the_installed_and_supported_versions(
    path: str, module: ModuleType | None, problem: str
) -> None:
    entry = private(path)
    with pytest.raises(LockgateError) as raised:
        _sdk_compat._check([entry], {entry.module: module})
    assert str(raised.value) == f"lockgate needs mcp's private name {path}{problem}; {ADVICE}"


def test_a_reexport_the_sdk_lacks_raises_the_checks_error_when_used() -> None:
    stand_in = _sdk_compat.__getattr__("stop_server_process")
    with pytest.raises(LockgateError, match="not supported"):
        stand_in(object())
    with pytest.raises(AttributeError):
        _sdk_compat.__getattr__("no_such_name")


class _AsAgent:
    """What lockgate's HTTP edge does: the caller, as the SDK's authenticated user."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope["user"] = AuthenticatedUser(AGENT)
        await self.app(scope, receive, send)


def _server(connections: list[Connection | None]) -> MCPServer:
    server = MCPServer("compat", log_level="WARNING")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The session id of the caller's connection."""
        connection = session_connection(ctx.request_context.session)
        connections.append(connection)
        return str(connection.session_id if connection else None)

    return server


@contextlib.asynccontextmanager
async def _serve(server: MCPServer) -> AsyncIterator[tuple[str, StreamableHTTPSessionManager]]:
    app = server.streamable_http_app(host="127.0.0.1")
    async with serve_asgi(_AsAgent(app)) as base:
        yield f"{base}/mcp", server.session_manager


@pytest.mark.parametrize("mode", MODES)
async def test_a_handler_reaches_the_connection_behind_its_session(mode: str) -> None:
    connections: list[Connection | None] = []
    server = _server(connections)
    async with _serve(server) as (url, _):
        with anyio.fail_after(20):
            async with Client(streamable_http_client(url), mode=mode) as client:
                await client.call_tool("whoami", {})
    assert len(connections) == 1
    assert isinstance(connections[0], Connection)


async def test_an_open_session_and_its_owner_are_found_by_id() -> None:
    server = _server([])
    async with _serve(server) as (url, manager):
        with anyio.fail_after(20):
            async with Client(streamable_http_client(url), mode="legacy") as client:
                result = await client.call_tool("whoami", {})
                [block] = result.content
                assert isinstance(block, TextContent)
                session_id = block.text
                transport = open_session(manager, session_id)
                owner = session_owner(manager, session_id)
    assert isinstance(transport, StreamableHTTPServerTransport)
    assert transport.mcp_session_id == session_id
    assert owner == {"client_id": AGENT.client_id, "issuer": None, "subject": None}
    assert open_session(manager, "unknown") is None
    assert session_owner(manager, "unknown") is None
