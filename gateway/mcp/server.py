"""The downstream MCP server: the gateway's catalogue and calls as one low-level MCP `Server`.

The same `Server` serves both protocol eras (2025-11-25 handshake sessions and 2026-07-28
per-request exchanges) over streamable HTTP and stdio.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import uuid
import weakref
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.gateway import Gateway
from gateway.mcp.caller_decision import elicit_callback
from gateway.mcp.calls import SESSION_HEADER, CallHandler, ToolCallRequest, max_hold_of, session_of
from gateway.mcp.handshake_sessions import LegacySessions
from gateway.mcp.relay import declared, named, request_peer
from gateway.mcp.resource_handlers import ResourceHandlers
from gateway.mcp.task_handlers import TaskHandlers
from gateway.resources.listen_streams import SessionListen
from policies.holder import PolicyHolder
from policies.task_offer import may_answer_as_task
from toolsets import _sdk_compat as sdk
from toolsets import trace_context
from toolsets.context import ANONYMOUS, CallContext, ClientInfo, Principal, ProgressCallback
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.convert import tool_def_to_mcp, tool_result_to_mcp
from toolsets.upstream.per_principal import principal_key
from toolsets.upstream.tasks import TASKS_EXTENSION, TaskAsk

__all__ = ["PRINCIPAL_SCOPE_KEY", "GatewayServer", "build_server"]

log = logging.getLogger("lockgate.downstream")
PRINCIPAL_SCOPE_KEY = "lockgate.principal"
"""ASGI scope key where the HTTP edge stores the authenticated `Principal`."""

Ctx = ServerRequestContext[Any]
MAX_CONVERTED = 10_000
_ANNOUNCED = NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)
"""What handshake-era sessions hear of: tool, prompt and resource list changes."""
TASKS_CAPABILITY = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)
"""2025-11-25's ``tasks`` capability: task-augmented ``tools/call``, ``tasks/list``, cancel."""


class GatewayServer(Server[Any]):
    """A low-level `Server` that advertises ``listChanged`` (tools, prompts, resources) to
    handshake-era clients too.

    ``downstream`` holds its handlers (the fast path shares its `CallHandler`).
    """

    downstream: Downstream

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or _ANNOUNCED,
            experimental_capabilities,
            extensions,
        )

    def get_capabilities(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        """The SDK's capabilities, and tasks when the gateway offers them (`gateway.tasks`):
        2025-11-25's ``tasks``, 2026-07-28's ``io.modelcontextprotocol/tasks`` extension."""
        capabilities = super().get_capabilities(
            notification_options,
            experimental_capabilities,
            extensions,
            protocol_version=protocol_version,
        )
        if not self.downstream.gateway.parts.tasks.offered:
            return capabilities
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            offered = {**(capabilities.extensions or {}), TASKS_EXTENSION: {}}
            return capabilities.model_copy(update={"extensions": offered})
        return capabilities.model_copy(update={"tasks": TASKS_CAPABILITY})


class _Catalogue:
    """MCP `Tool` objects for listings, each converted once per tool definition (name and pin)
    and policy version (which tools a held call may be answered as a task for,
    `policies.task_offer`), and the input schemas the SDK checks ``Mcp-Param-*`` headers
    against."""

    def __init__(self, policy: PolicyHolder) -> None:
        self._policy = policy
        self._converted: dict[tuple[str, str, str], types.Tool] = {}
        self._schemas: dict[str, Mapping[str, Any]] = {}

    def tools(self, catalogue: dict[str, ToolDef]) -> list[types.Tool]:
        tools = []
        engine = self._policy.current
        for tool in catalogue.values():
            key = (tool.name, tool.pin, engine.version)
            converted = self._converted.get(key)
            if converted is None:
                if len(self._converted) >= MAX_CONVERTED:
                    self._converted.clear()
                offer = may_answer_as_task(engine, tool)
                converted = self._converted[key] = tool_def_to_mcp(tool, offer_tasks=offer)
                self._schemas[tool.name] = tool.input_schema
            tools.append(converted)
        return tools

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
    """The MCP session (legacy HTTP), else this connection's id (stdio); for modern HTTP, which
    has no sessions, the caller's own key (`SESSION_HEADER`, else ``_meta``), if any."""
    headers = getattr(ctx.request, "headers", None)
    if headers is not None:
        value = headers.get("mcp-session-id") or headers.get(SESSION_HEADER)
        return str(value) if value else session_of(ctx.meta)
    return connection_id


def _client_info(ctx: Ctx, transport: str) -> ClientInfo:
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    params = ctx.session.client_params
    name, version = named(params.client_info if params is not None else None)
    return ClientInfo(
        era="modern" if modern else "legacy",
        protocol_version=ctx.protocol_version,
        transport="http" if transport == "http" else "stdio",
        **declared(ctx.session.client_capabilities),
        name=name,
        version=version,
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
        self.listen = SessionListen(self._listen_key)
        self.catalogue = _Catalogue(gateway.policy)
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.by_session: weakref.WeakValueDictionary[str, Connection] = (
            weakref.WeakValueDictionary()
        )
        self.sessions = LegacySessions()
        self.handle = CallHandler(gateway)
        gateway.on_tools_changed(self.tools_changed)
        gateway.on_session_tools_changed(self.session_tools_changed)

    def context(self, ctx: Ctx) -> CallContext:
        """The context of a listing made through the SDK."""
        return CallContext(
            principal=_principal(ctx, self.principal),
            session_id=_session_id(ctx, self.connection_id),
            client=_client_info(ctx, self.transport),
        )

    async def remember_sessions(self, ctx: Ctx, call_next: Any) -> Any:
        """Server middleware: a handshake-era session is known from its first request on
        (``initialize`` included), so it hears every list_changed."""
        self._remember(ctx)
        return await call_next(ctx)

    def _remember(self, ctx: Ctx) -> None:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            connection = sdk.session_connection(ctx.session)
            session_id = _session_id(ctx, self.connection_id)
            if connection is not None:
                self.connections.add(connection)
                if session_id is not None:
                    self.by_session[session_id] = connection
            if self.transport == "http" and ctx.method != "initialize":
                session_id = _session_id(ctx, None)
                if session_id is not None:
                    self.sessions.learn(session_id, _client_info(ctx, self.transport))

    async def list_tools(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        catalogue = await self.gateway.tools(self.context(ctx))
        return types.ListToolsResult(tools=self.catalogue.tools(catalogue))

    async def call_tool(
        self, ctx: Ctx, params: types.CallToolRequestParams, *, task: TaskAsk | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        client = _client_info(ctx, self.transport)
        request = ToolCallRequest(
            name=params.name,
            arguments=params.arguments or {},
            request_state=params.request_state,
            input_responses=params.input_responses,
            max_hold=max_hold_of(params.meta),
            session=session_of(params.meta),
            request_id=ctx.request_id,
            trace=trace_context.incoming(params.meta, getattr(ctx.request, "headers", None)),
        )
        principal = _principal(ctx, self.principal)
        session_id = _session_id(ctx, self.connection_id)
        if task is not None:  # a held call answered as a task is run later by this re-issue
            task.reissue = functools.partial(  # (no way back to the client then: no elicitation)
                self.handle,
                request,
                principal=principal,
                session_id=session_id,
                client=dataclasses.replace(client, elicitation=False),
            )
        outcome = await self.handle(
            request,
            principal=principal,
            session_id=session_id,
            client=client,
            progress=_progress(ctx),
            elicit=elicit_callback(ctx) if client.era == "legacy" and client.elicitation else None,
            peer=request_peer(ctx, client),
            task=task,
        )
        if isinstance(outcome, ErrorData):
            raise MCPError.from_error_data(outcome)
        if isinstance(outcome, ToolResult):
            return tool_result_to_mcp(outcome)
        return outcome

    def _listen_key(self, ctx: Ctx) -> tuple[str, str | None]:
        return (_principal(ctx, self.principal).id, _session_id(ctx, self.connection_id))

    async def tools_changed(self, source: str) -> None:
        await self.listen.publish(ToolsListChanged())
        for connection in list(self.connections):
            await self._tell(connection)

    async def session_tools_changed(self, principal: str, session_id: str | None) -> None:
        """Only this session's list changed: its 2025-11-25 session or its listen streams."""
        await self.listen.publish(ToolsListChanged(), (principal, session_id))
        connection = self.by_session.get(session_id) if session_id is not None else None
        if connection is not None:
            await self._tell(connection)

    async def _tell(self, connection: Connection) -> None:
        try:
            await connection.send_tool_list_changed()
        except Exception as exc:  # a gone session must not stop the others
            log.debug("list_changed not delivered to a session: %r", exc)
            self.connections.discard(connection)


def build_server(
    gateway: Gateway, *, transport: str = "http", principal: Principal = ANONYMOUS
) -> GatewayServer:
    """The downstream MCP server for ``gateway``."""
    downstream = Downstream(gateway, transport=transport, principal=principal)
    surface = ResourceHandlers(
        gateway.parts.resources,
        context=downstream.context,
        connections=downstream.connections,
        listen=downstream.listen,
    )
    server = GatewayServer(
        "lockgate",
        version="0.1.0",
        instructions="Tools of several MCP servers, behind lockgate's policies and approvals.",
        on_list_tools=downstream.list_tools,
        on_call_tool=downstream.call_tool,
        on_subscriptions_listen=surface.listen,  # holds the resources a stream names
        get_tool_input_schema=downstream.catalogue.input_schema,
        on_list_resources=surface.list_resources,
        on_list_resource_templates=surface.list_resource_templates,
        on_read_resource=surface.read_resource,
        on_subscribe_resource=surface.subscribe_resource,
        on_unsubscribe_resource=surface.unsubscribe_resource,
        on_list_prompts=surface.list_prompts,
        on_get_prompt=surface.get_prompt,
        on_completion=surface.complete,
    )
    server.middleware.append(downstream.remember_sessions)
    if (telemetry := gateway.parts.telemetry) is not None:  # a span per request but tools/call
        session_of = functools.partial(_session_id, connection_id=downstream.connection_id)
        server.middleware.append(telemetry.middleware(transport, session_of))
    TaskHandlers(downstream, gateway.parts.tasks, lambda: server.server_info_stamp).register(server)
    logs = gateway.parts.relay.logs

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        principal = principal_key(_principal(ctx, downstream.principal))
        return await logs.set_level(ctx, params, principal=principal)

    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.downstream = downstream
    return server
