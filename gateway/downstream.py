"""The downstream MCP server: the gateway's catalogue and calls as one low-level MCP `Server`.

The same `Server` serves both protocol eras (2025-11-25 handshake sessions and 2026-07-28
per-request exchanges) over streamable HTTP and stdio.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.approvals.toolset import InputRequired
from gateway.caller_approval import answer_input, elicit_callback, input_required_result
from gateway.gateway import Gateway
from gateway.legacy_sessions import LegacySessions
from toolsets.context import ANONYMOUS, CallContext, ClientInfo, Principal, ProgressCallback
from toolsets.errors import ToolNotFoundError
from toolsets.mcp_convert import tool_def_to_mcp, tool_result_to_mcp
from toolsets.tooldef import ToolDef

__all__ = ["PRINCIPAL_SCOPE_KEY", "GatewayServer", "build_server"]

log = logging.getLogger("lockgate.downstream")
PRINCIPAL_SCOPE_KEY = "lockgate.principal"
"""ASGI scope key where the HTTP edge stores the authenticated `Principal`."""

Ctx = ServerRequestContext[Any]


class GatewayServer(Server[Any]):
    """A low-level `Server` that advertises ``tools.listChanged`` to handshake-era clients too.

    ``downstream`` holds its handlers (the express lane calls the gateway through it).
    """

    downstream: Downstream

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class _Catalogue:
    """MCP `Tool` objects for a catalogue, converted once per catalogue version."""

    def __init__(self) -> None:
        self._source: dict[str, ToolDef] | None = None
        self._tools: list[types.Tool] = []
        self._schemas: dict[str, Mapping[str, Any]] = {}

    def tools(self, catalogue: dict[str, ToolDef]) -> list[types.Tool]:
        if catalogue is not self._source:
            self._tools = [tool_def_to_mcp(t) for t in catalogue.values()]
            self._schemas = {t.name: t.input_schema for t in catalogue.values()}
            self._source = catalogue
        return self._tools

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        return self._schemas.get(name)


def _principal(ctx: Ctx, default: Principal) -> Principal:
    request = ctx.request
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict):
        found = scope.get(PRINCIPAL_SCOPE_KEY)
        if isinstance(found, Principal):
            return found
    return default


def _session_id(ctx: Ctx, connection_id: str | None) -> str | None:
    """The MCP session (legacy HTTP), else this connection's id (stdio); None for modern HTTP,
    which has no sessions."""
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        value = headers.get("mcp-session-id")
        return str(value) if value else None
    return connection_id


def _client_info(ctx: Ctx, transport: str) -> ClientInfo:
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    caps = ctx.session.client_capabilities
    return ClientInfo(
        era="modern" if modern else "legacy",
        protocol_version=ctx.protocol_version,
        elicitation=caps is not None and caps.elicitation is not None,
        transport="http" if transport == "http" else "stdio",
    )


def _progress(ctx: Ctx) -> ProgressCallback | None:
    meta = ctx.meta
    if not meta or meta.get("progress_token") is None:
        return None
    session = ctx.session

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        await session.report_progress(progress, total, message)

    return forward


class Downstream:
    """Handlers of the downstream `Server`, bound to one `Gateway`."""

    def __init__(self, gateway: Gateway, *, transport: str, principal: Principal) -> None:
        self.gateway = gateway
        self.transport = transport
        self.principal = principal
        self.connection_id = f"stdio-{uuid.uuid4().hex}" if transport == "stdio" else None
        self.bus = InMemorySubscriptionBus()
        self.catalogue = _Catalogue()
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.sessions = LegacySessions()
        gateway.on_tools_changed(self.tools_changed)

    def context(self, ctx: Ctx) -> CallContext:
        client = _client_info(ctx, self.transport)
        legacy_elicit = client.era == "legacy" and client.elicitation
        return CallContext(
            principal=_principal(ctx, self.principal),
            session_id=_session_id(ctx, self.connection_id),
            client=client,
            progress=_progress(ctx),
            elicit=elicit_callback(ctx) if legacy_elicit else None,
        )

    async def remember_sessions(self, ctx: Ctx, call_next: Any) -> Any:
        """Server middleware: a handshake-era session is known from its first request on
        (``initialize`` included), so it hears every list_changed."""
        self._remember(ctx)
        return await call_next(ctx)

    def _remember(self, ctx: Ctx) -> None:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = getattr(ctx.session, "_connection", None)
            if isinstance(connection, Connection):
                self.connections.add(connection)
            if self.transport == "http" and ctx.method != "initialize":
                session_id = _session_id(ctx, None)
                if session_id is not None:
                    principal = _principal(ctx, self.principal)
                    self.sessions.learn(session_id, principal.id, _client_info(ctx, self.transport))

    async def list_tools(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        catalogue = await self.gateway.tools(self.context(ctx))
        return types.ListToolsResult(tools=self.catalogue.tools(catalogue))

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        call_ctx = self.context(ctx)
        if params.request_state is not None and not await answer_input(
            self.gateway, params, call_ctx
        ):
            # No decision from the caller: an approver decides, so do not ask again.
            call_ctx = replace(call_ctx, client=replace(call_ctx.client, elicitation=False))
        try:
            result = await self.gateway.call_tool(params.name, params.arguments or {}, call_ctx)
        except ToolNotFoundError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        except InputRequired as held:
            return input_required_result(self.gateway, held, call_ctx)
        return tool_result_to_mcp(result)

    async def tools_changed(self, source: str) -> None:
        await self.bus.publish(ToolsListChanged())
        for connection in list(self.connections):
            try:
                await connection.send_tool_list_changed()
            except Exception as exc:  # a gone session must not stop the broadcast
                log.debug("list_changed not delivered to a session: %r", exc)
                self.connections.discard(connection)


def build_server(
    gateway: Gateway, *, transport: str = "http", principal: Principal = ANONYMOUS
) -> GatewayServer:
    """The downstream MCP server for ``gateway``."""
    downstream = Downstream(gateway, transport=transport, principal=principal)
    server = GatewayServer(
        "lockgate",
        version="0.1.0",
        instructions="Tools of several MCP servers, behind lockgate's policies and approvals.",
        on_list_tools=downstream.list_tools,
        on_call_tool=downstream.call_tool,
        on_subscriptions_listen=ListenHandler(downstream.bus),
        get_tool_input_schema=downstream.catalogue.input_schema,
    )
    server.middleware.append(downstream.remember_sessions)
    server.downstream = downstream
    return server
