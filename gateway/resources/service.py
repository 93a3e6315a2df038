"""`ResourceService`: the gateway's resources, prompts and completions, over every MCP upstream.

One per `Gateway` (``gw.parts.resources``), shared by its downstream faces: listings, reads, gets
and completions (`Resources`, `Prompts`, `Completions`), the reference-counted upstream resource
subscriptions (`Subscriptions`), and the change events each face delivers to its sessions (a
`ChangeListener`): an upstream's ``resources/updated`` (for a URI some session holds, under its
gateway URI), ``resources/list_changed`` and ``prompts/list_changed``, and a list change whenever
an upstream that offers resources or prompts comes up or goes away. A server reached with each
caller's own credentials (``pools``) serves each caller over their own connection
(`gateway.resources.callers`); its connections' change events are not relayed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Protocol, Self

import mcp_types as types
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
)

from gateway.config.model import GatewayConfig
from gateway.resources.completions import Completions
from gateway.resources.guard import ResourceGuard
from gateway.resources.prompt_list import Prompts
from gateway.resources.resource_list import Resources
from gateway.resources.routes import Routes
from gateway.resources.upstream import UpstreamResources
from gateway.resources.upstream_subscriptions import Subscriptions
from toolsets.upstream.per_principal import PerPrincipalToolset
from toolsets.upstream.server import MCPServerToolset, UpstreamStatus

__all__ = ["ChangeListener", "ResourceService"]

log = logging.getLogger("lockgate.surface")


class ChangeListener(Protocol):
    """A downstream face's delivery of a change event to its sessions."""

    async def __call__(self, event: ServerEvent) -> None: ...


class ResourceService:
    """Resources, prompts and completions of a gateway (see the module docstring).

    Args:
        upstreams: The upstream toolsets by server name, in config order.
        prefixes: Each server's prefix by name (names and URIs are served under it).
        guard: The policy over what listings show, and each read and get.
        ready: Waits, the first time, for upstreams still making their first connection.
        pools: The servers reached with each caller's own credentials, by name.
    """

    def __init__(
        self,
        upstreams: Mapping[str, MCPServerToolset],
        prefixes: Mapping[str, str],
        *,
        guard: ResourceGuard,
        ready: Callable[[], Awaitable[None]],
        pools: Mapping[str, PerPrincipalToolset] | None = None,
    ) -> None:
        self.routes = Routes(upstreams, prefixes, pools)
        self.resources = Resources(self.routes, guard)
        self.prompts = Prompts(self.routes, guard)
        self.completions = Completions(self.routes, guard)
        self.subscriptions = Subscriptions(self.routes)
        self.guard = guard
        self.ready = ready
        self._listeners: list[ChangeListener] = []
        for toolset in upstreams.values():
            toolset.notification_listeners.append(self._heard)

    @classmethod
    def for_config(
        cls,
        config: GatewayConfig,
        upstreams: Mapping[str, MCPServerToolset],
        *,
        guard: ResourceGuard,
        ready: Callable[[], Awaitable[None]],
        pools: Iterable[PerPrincipalToolset] = (),
    ) -> ResourceService:
        """The resources of ``upstreams`` and of the per-caller ``pools`` (but for a pool of a
        server in ``upstreams``: its own session serves them), each under its configured
        prefix."""
        prefixes = {server.name: server.exposed_prefix for server in config.servers}
        callers = {pool.name: pool for pool in pools if pool.name not in upstreams}
        return cls(upstreams, prefixes, guard=guard, ready=ready, pools=callers)

    def on_event(self, listener: ChangeListener) -> None:
        """Deliver every change event to ``listener`` (a downstream face)."""
        self._listeners.append(listener)

    async def upstream_status(self, server: str, status: UpstreamStatus) -> None:
        """``server`` came up or was lost: what it offers joins or leaves the listings, and
        every session hears of it (after a reconnect, once its subscriptions are renewed)."""
        upstream = self.routes.upstreams.get(server)
        if upstream is None:
            return
        if status == "up":  # told once its subscriptions are back: updates reach them again
            self.subscriptions.reconnected(server, lambda: self._lists_changed(upstream))
        elif status == "down":  # not each retry of a server that stays down
            await self._lists_changed(upstream)

    async def _lists_changed(self, upstream: UpstreamResources) -> None:
        """Whatever lists ``upstream`` offers (all of them when it is down) changed."""
        down = upstream.toolset.client is None
        if down or upstream.offers("resources"):
            await self._announce(ResourcesListChanged())
        if down or upstream.offers("prompts"):
            await self._announce(PromptsListChanged())

    async def _heard(self, server: str, notification: types.ServerNotification) -> None:
        event: ServerEvent
        if isinstance(notification, types.ResourceUpdatedNotification):
            uri = notification.params.uri
            if not self.subscriptions.held(server, uri):
                return  # nobody asked (an update after the last unsubscribe)
            event = ResourceUpdated(uri=self.routes.gateway_uri(server, uri))
        elif isinstance(notification, types.ResourceListChangedNotification):
            event = ResourcesListChanged()
        elif isinstance(notification, types.PromptListChangedNotification):
            event = PromptsListChanged()
        else:
            return
        await self._announce(event)

    async def _announce(self, event: ServerEvent) -> None:
        for listener in list(self._listeners):
            try:
                await listener(event)
            except Exception:  # one face must not keep the event from the others
                log.exception("delivering %r failed", event)

    async def __aenter__(self) -> Self:
        await self.subscriptions.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self.subscriptions.__aexit__(exc_type, exc, tb)
