"""Upstream toolsets built from the config: one `MCPServerToolset` per enabled server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway.config import GatewayConfig, ServerConfig, python_command
from toolsets._sdk_compat import TransportStreams, create_mcp_http_client
from toolsets.abstract import ToolsChangedHandler
from toolsets.mcp_server import ClientTarget, MCPServerToolset, StatusHandler

__all__ = ["build_upstream"]

SESSION_HEADER = "mcp-session-id"


def _target(
    config: GatewayConfig, server: ServerConfig, session_gone: Callable[[], None]
) -> ClientTarget:
    """What `mcp.Client` connects to for ``server``; upstream credentials come only from config.
    ``session_gone`` hears a 404 to a request that named a session (the server forgot it)."""
    if server.transport == "stdio":
        assert server.command is not None  # checked by ServerConfig
        return StdioServerParameters(
            command=python_command(server.command),
            args=list(server.args),
            env=dict(server.env) or None,
            cwd=str(config.resolve(server.cwd)) if server.cwd else str(config.base_dir),
        )
    assert server.url is not None  # checked by ServerConfig
    if server.transport == "sse":
        return sse_client(server.url, headers=dict(server.headers) or None)
    return _streamable_http(server.url, dict(server.headers), session_gone)


@contextlib.asynccontextmanager
async def _streamable_http(
    url: str, headers: dict[str, str], session_gone: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    async def watch(response: httpx2.Response) -> None:
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            session_gone()

    http = create_mcp_http_client(headers=headers or None)
    http.event_hooks = {**http.event_hooks, "response": [*http.event_hooks["response"], watch]}
    # The SDK does not close a client it is given: this connection owns (and closes) its own.
    async with (
        http as http_client,
        streamable_http_client(url, http_client=http_client) as streams,
    ):
        yield streams


def build_upstream(
    config: GatewayConfig,
    server: ServerConfig,
    *,
    on_tools_changed: ToolsChangedHandler | None = None,
    on_status: StatusHandler | None = None,
) -> MCPServerToolset:
    """The toolset of one configured upstream server (not yet connected)."""
    toolset = MCPServerToolset(
        server.name,
        lambda: _target(config, server, toolset.session_gone),
        timeout=server.timeout or config.call_timeout,
        connect_timeout=server.connect_timeout,
        max_result_bytes=server.max_result_bytes,
        on_tools_changed=on_tools_changed,
        on_status=on_status,
    )
    return toolset
