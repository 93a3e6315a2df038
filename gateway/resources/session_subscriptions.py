"""`SessionSubscriptions`: which downstream sessions hold which resources, and telling them.

A 2025-11-25 session subscribes with ``resources/subscribe`` and holds the resource until it
unsubscribes or its connection closes; it is told ``notifications/resources/updated`` on its
connection. A 2026-07-28 client names the URIs on a ``subscriptions/listen`` stream and holds
them while the stream is open; only the URIs it may see are acknowledged. Each holding counts
once towards the upstream subscription (`Subscriptions`). List changes go to every session:
2025-11-25 connections, and the listen streams that asked for them. A resource of a server
reached with each caller's own credentials cannot be subscribed to (yet): ``resources/subscribe``
is refused naming it, and a listen stream does not acknowledge it.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
)
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, SubscriptionsListenRequestParams
from mcp_types import SubscriptionsListenResult as ListenResult

from gateway.resources.listen_streams import SessionListen
from gateway.resources.routes import Route
from gateway.resources.service import ResourceService
from gateway.resources.upstream import UpstreamResources
from toolsets import _sdk_compat as sdk
from toolsets.context import CallContext
from toolsets.errors import LockgateError, ResourceDenied, ResourceNotFound

__all__ = ["MAX_HELD", "SessionSubscriptions"]

log = logging.getLogger("lockgate.surface")
Ctx = ServerRequestContext[Any]
MAX_HELD = 1000
"""The most resources one session (or listen stream) may hold."""


class SessionSubscriptions:
    """Downstream resource subscriptions of one face (see the module docstring)."""

    def __init__(
        self,
        service: ResourceService,
        *,
        connections: weakref.WeakSet[Connection],
        listen: SessionListen,
    ) -> None:
        self.service = service
        self._connections = connections
        self._listen = listen
        self._held: dict[Connection, dict[str, Route]] = {}

    async def subscribe(self, ctx: Ctx, uri: str, call: CallContext) -> None:
        """``resources/subscribe``: the session of ``ctx`` holds ``uri`` (once, however often).

        Raises:
            ResourceNotFound: ``uri`` is unknown or hidden from ``call``, or its server refused
                the subscription as having no such resource: one answer, naming ``uri``.
            ResourceDenied: its server is reached with each caller's own credentials.
            UpstreamError: the server refused the subscription.
        """
        connection = _connection(ctx)
        route = self._visible(uri, call)
        held = self._held.get(connection)
        if held is None:
            held = self._held[connection] = {}
            connection.exit_stack.callback(self._drop, connection)
        if uri in held:
            return
        if len(held) >= MAX_HELD:
            raise MCPError(INVALID_PARAMS, f"A session holds at most {MAX_HELD} subscriptions.")
        held[uri] = route  # before waiting on the upstream: a second subscribe is a no-op
        try:
            await self.service.subscriptions.acquire(route)
        except BaseException as exc:
            held.pop(uri, None)
            if isinstance(exc, ResourceNotFound):  # the server's own terms: as a hidden one
                raise ResourceNotFound(uri) from None
            raise
        if self._held.get(connection) is not held or uri not in held:  # let go meanwhile
            self.service.subscriptions.release(route)

    async def unsubscribe(self, ctx: Ctx, uri: str) -> None:
        """``resources/unsubscribe``: the session lets go of ``uri`` (a no-op if not held)."""
        route = self._held.get(_connection(ctx), {}).pop(uri, None)
        if route is not None:
            self.service.subscriptions.release(route)

    def _drop(self, connection: Connection) -> None:
        """The connection closed: everything it held is let go."""
        for route in self._held.pop(connection, {}).values():
            self.service.subscriptions.release(route)

    async def listen(
        self, ctx: Ctx, params: SubscriptionsListenRequestParams, call: CallContext
    ) -> ListenResult:
        """``subscriptions/listen``: serve the stream, holding the visible URIs it names."""
        routes: dict[str, Route] = {}
        try:
            for uri in (params.notifications.resource_subscriptions or ())[:MAX_HELD]:
                if uri not in routes and (route := await self._hold(uri, call)) is not None:
                    routes[uri] = route
            honored = params.notifications.model_copy(
                update={"resource_subscriptions": list(routes) or None}
            )
            return await self._listen(ctx, params.model_copy(update={"notifications": honored}))
        finally:
            for route in routes.values():
                self.service.subscriptions.release(route)

    async def _hold(self, uri: str, call: CallContext) -> Route | None:
        try:
            route = self._visible(uri, call)
            await self.service.subscriptions.acquire(route)
        except LockgateError as exc:  # not acknowledged: the client sees what it holds
            log.info("listen stream: not subscribed to %r: %s", uri, exc)
            return None
        return route

    def _visible(self, uri: str, call: CallContext) -> Route:
        route = self.service.routes.uri(uri)
        if not self.service.guard.resource_visible(route.target, route.server, call):
            raise ResourceNotFound(uri)
        if not isinstance(route.upstream, UpstreamResources):
            raise ResourceDenied(
                uri,
                f"{uri} cannot be subscribed to: its server {route.server!r} is reached with each "
                "caller's own credentials, whose resources lockgate does not subscribe to yet; "
                "read it again to see changes",
            )
        return route

    async def deliver(self, event: ServerEvent) -> None:
        """Tell the sessions of this face about ``event``: an update only those holding it."""
        await self._listen.publish(event)  # each listen stream takes what it asked for
        if isinstance(event, ResourceUpdated):
            targets = [c for c, held in self._held.items() if event.uri in held]
        else:
            targets = list(self._connections)
        for connection in targets:
            try:
                await _tell(connection, event)
            except Exception as exc:  # a gone session must not stop the others
                log.debug("%r not delivered to a session: %r", event, exc)


def _connection(ctx: Ctx) -> Connection:
    connection = sdk.session_connection(ctx.session)
    if connection is None:
        raise MCPError(INVALID_REQUEST, "resources/subscribe needs a 2025-11-25 session")
    return connection


async def _tell(connection: Connection, event: ServerEvent) -> None:
    if isinstance(event, ResourceUpdated):
        await connection.send_resource_updated(event.uri)
    elif isinstance(event, ResourcesListChanged):
        await connection.send_resource_list_changed()
    elif isinstance(event, PromptsListChanged):
        await connection.send_prompt_list_changed()
