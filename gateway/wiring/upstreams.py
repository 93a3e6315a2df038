"""Upstream toolsets built from the config: one `MCPServerToolset` per enabled server."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig, python_command
from gateway.telemetry.build import tracing_wanted
from gateway.telemetry.http_headers import trace_headers
from toolsets._sdk_compat import TransportStreams
from toolsets.abstract import ToolsChangedHandler
from toolsets.upstream.http_limit import ResponseLimit
from toolsets.upstream.server import ClientTarget, MCPServerToolset, StatusHandler

__all__ = ["build_upstream"]

SESSION_HEADER = "mcp-session-id"
HTTP_TIMEOUT = httpx2.Timeout(30, read=300)
"""As the SDK's own clients: 30 s to connect or send, 5 minutes between reads of a stream."""
SSE_EVENT_LIMIT = 1 << 20
"""The SDK's ``sse_client`` reads events with httpx2's limit of 1 MiB and drops the whole
connection on a larger one: an ``sse`` upstream's results are capped below that."""


def _target(
    config: GatewayConfig,
    server: ServerConfig,
    session_gone: Callable[[], None],
    secret: str | None = None,
    auth: httpx2.Auth | None = None,
) -> ClientTarget:
    """What `mcp.Client` connects to for ``server``; upstream credentials come only from config,
    and (``secret``: one principal's, in secret mode) the vault, as a header or variable
    (``auth``: one principal's OAuth grant, which adds its access token).
    ``session_gone`` hears a 404 to a request that named a session (the server forgot it)."""
    credentials = server.credentials
    if server.transport == "stdio":
        assert server.command is not None  # checked by ServerConfig
        env = dict(server.env)
        if secret is not None and credentials.env is not None:
            env[credentials.env] = secret
        return StdioServerParameters(
            command=python_command(server.command),
            args=list(server.args),
            env=env or None,
            cwd=str(config.resolve(server.cwd)) if server.cwd else str(config.base_dir),
        )
    assert server.url is not None  # checked by ServerConfig
    headers = dict(server.headers)
    if secret is not None and credentials.header is not None:
        headers[credentials.header] = credentials.value.replace("{secret}", secret)
    traced = tracing_wanted(config) is not None  # trace context in headers too
    if server.transport == "sse":
        factory = functools.partial(_http_client, server, traced=traced)
        return sse_client(
            server.url, headers=headers or None, httpx_client_factory=factory, auth=auth
        )
    return _streamable_http(
        server, server.url, session_gone, traced=traced, headers=headers, auth=auth
    )


@contextlib.asynccontextmanager
async def _streamable_http(
    server: ServerConfig,
    url: str,
    session_gone: Callable[[], None],
    *,
    traced: bool = False,
    headers: dict[str, str] | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[TransportStreams]:
    async def watch(response: httpx2.Response) -> None:
        if response.status_code == 404 and SESSION_HEADER in response.request.headers:
            session_gone()

    http = _http_client(server, headers=headers or None, traced=traced, auth=auth)
    http.event_hooks = {**http.event_hooks, "response": [*http.event_hooks["response"], watch]}
    # The SDK does not close a client it is given: this connection owns (and closes) its own.
    # Its own event limit never trips: `ResponseLimit` hands it no event over the limit.
    async with (
        http as http_client,
        streamable_http_client(
            url, http_client=http_client, max_sse_event_size=server.max_result_bytes
        ) as streams,
    ):
        yield streams


def _http_client(
    server: ServerConfig,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
    *,
    traced: bool = False,
) -> httpx2.AsyncClient:
    """An HTTP client for ``server`` (the SDK's client factory signature) whose responses hand
    over no message larger than ``max_result_bytes``."""
    limit, setting = server.max_result_bytes, "max_result_bytes"
    if server.transport == "sse" and limit > SSE_EVENT_LIMIT:
        limit, setting = SSE_EVENT_LIMIT, f"max_result_bytes, at most {SSE_EVENT_LIMIT} over sse"
    transport = ResponseLimit(
        httpx2.AsyncHTTPTransport(), limit=limit, server=server.name, setting=setting
    )
    hooks = {"request": [trace_headers]} if traced else None
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or HTTP_TIMEOUT,
        auth=auth,
        transport=transport,
        event_hooks=hooks,
    )


def build_upstream(
    config: GatewayConfig,
    server: ServerConfig,
    *,
    on_tools_changed: ToolsChangedHandler | None = None,
    on_status: StatusHandler | None = None,
    secret: str | None = None,
    auth: httpx2.Auth | None = None,
) -> MCPServerToolset:
    """The toolset of one configured upstream server (not yet connected); ``secret``: one
    principal's connection in secret mode, ``auth``: in oauth mode
    (`gateway.wiring.credentials`)."""
    toolset = MCPServerToolset(
        server.name,
        lambda: _target(config, server, toolset.session_gone, secret, auth),
        timeout=server.timeout or config.call_timeout,
        connect_timeout=server.connect_timeout,
        max_result_bytes=server.max_result_bytes,
        max_description=server.max_description,
        client_requests=frozenset(server.client_requests),
        on_tools_changed=on_tools_changed,
        on_status=on_status,
    )
    return toolset
