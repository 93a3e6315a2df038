"""The HTTP face: MCP at ``/mcp``, ``/healthz``, the OAuth resource metadata under
``/.well-known/``; long-lived machinery starts in the lifespan."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway.api.routes import api_routes
from gateway.auth.tokens import Authenticator
from gateway.background.health import with_store
from gateway.config.listen import ListenConfig
from gateway.gateway import Gateway
from gateway.http.agent_auth import AgentAuthMiddleware
from gateway.http.client_document import client_document_routes
from gateway.http.connect import connect_routes
from gateway.http.oauth_callback import oauth_routes
from gateway.http.origin_guard import HostOriginGuard
from gateway.http.step_up import StepUp
from gateway.http.webpage import web_routes
from gateway.mcp.http_fast_path import FastPath
from gateway.mcp.server import build_server
from gateway.metrics import metrics_endpoint
from policies.held_scopes import HeldScopes

__all__ = ["build_app", "security_settings"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def security_settings(listen: ListenConfig) -> TransportSecuritySettings:
    """Host and Origin allow-lists: loopback names on any port, plus what the config adds."""
    hosts = [f"{h}:*" for h in LOOPBACK_HOSTS] + list(LOOPBACK_HOSTS) + list(listen.allowed_hosts)
    origins = [f"http://{h}:*" for h in LOOPBACK_HOSTS] + list(listen.allowed_origins)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_app(gateway: Gateway, *, manage_gateway: bool = True) -> Starlette:
    """The Starlette app serving ``gateway``; enters the gateway in its lifespan when asked to."""
    tool_scopes = HeldScopes(gateway.policy)
    authenticator = Authenticator(gateway.config.auth, tool_scopes=tool_scopes)
    step_up = StepUp(tool_scopes, gateway.tools, authenticator.metadata)
    security = security_settings(gateway.config.listen)
    server = build_server(gateway, transport="http")
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)
    mcp_app = FastPath(StreamableHTTPASGIApp(manager), server, manager, metrics=gateway.metrics)

    async def healthz(request: Request) -> JSONResponse:
        health = with_store(gateway.health(), gateway.store)  # degraded while it is away
        return JSONResponse(health, status_code=200)

    render_metrics = metrics_endpoint(gateway.metrics)

    async def metrics(request: Request) -> Response:
        pending = await gateway.store.list(state="pending", limit=1_000_000)
        gateway.metrics.set_pending_approvals(len(pending))
        return await render_metrics(request)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if manage_gateway:
                await stack.enter_async_context(gateway)
            await stack.enter_async_context(manager.run())
            keys = await stack.enter_async_context(anyio.create_task_group())
            keys.start_soon(authenticator.prefetch)  # JWT issuers' keys, without delaying start
            try:
                yield
            finally:
                keys.cancel_scope.cancel()
                gateway.closing()  # held calls cut by shutdown stay pending for the restart

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/mcp", AgentAuthMiddleware(mcp_app, authenticator, step_up)),
        *api_routes(gateway, authenticator),
        *authenticator.metadata.routes(),
        *web_routes(),
        *connect_routes(gateway),
        *oauth_routes(gateway),
        *client_document_routes(gateway),
    ]
    middleware = [Middleware(HostOriginGuard, settings=security)]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
