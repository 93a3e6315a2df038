"""`Resources`: the upstreams' resources and templates as one listing, and reads routed back.

Each entry is served under its gateway URI (`toolsets.resource_uris`) with ``_meta`` naming its
server (``lockgate/server``), its title and description escaped and cut like a tool's
(`toolsets.upstream.sanitize`); entries the guard hides are left out. A read maps the gateway URI
back to its server and that server's own URI, goes through the guard, and comes back with every
content's URI (and every resource URI inside it) served as the gateway's; one the server does
not have is "not found" under the gateway URI, exactly as one the guard hides. A server reached
with each caller's own credentials lists and reads over the caller's own connection; one they
have not connected to is left out of their listings, and their read of it is refused
``not_connected`` (`ResourceDenied` carrying the refusal), naming how to connect.
"""

from __future__ import annotations

import contextlib
from typing import Any, TypeVar

import mcp_types as types

from gateway.resources.guard import ResourceGuard
from gateway.resources.paging import collect
from gateway.resources.routes import Route, Routes
from gateway.resources.upstream import UpstreamResources
from toolsets.context import CallContext
from toolsets.errors import ResourceDenied, ResourceNotFound
from toolsets.refusal import REFUSAL_META
from toolsets.upstream.principal_ports import NotConnected
from toolsets.upstream.sanitize import served_text

__all__ = ["Resources", "not_connected_data", "served_entry", "served_meta"]

SERVER_META = "lockgate/server"
M = TypeVar("M", types.Resource, types.ResourceTemplate, types.Prompt)


def served_meta(meta: dict[str, Any] | None, server: str) -> dict[str, Any]:
    """An entry's ``_meta`` as served: the upstream's (but for its ``serverInfo`` stamp and keys
    the gateway owns) beside ``lockgate/server``."""
    kept = {
        k: v
        for k, v in (meta or {}).items()
        if not k.startswith("lockgate/") and k != types.SERVER_INFO_META_KEY
    }
    return {**kept, SERVER_META: server}


def not_connected_data(exc: NotConnected) -> dict[str, Any]:
    """The JSON-RPC error data of a request refused ``not_connected``: the refusal, as a tool
    call's result carries it."""
    return {REFUSAL_META: exc.refusal.to_json()}


def served_entry(entry: M, upstream: UpstreamResources, **changes: Any) -> M:
    """``entry`` of ``upstream`` as served: ``changes`` applied, text escaped and cut, meta."""
    limit = upstream.toolset.max_description
    for text in ("title", "description"):
        value = getattr(entry, text)
        if value is not None:
            changes[text] = served_text(value, limit)
    changes["meta"] = served_meta(entry.meta, upstream.name)
    return entry.model_copy(update=changes)


class Resources:
    """Resource listings and reads over every upstream (see the module docstring)."""

    def __init__(self, routes: Routes, guard: ResourceGuard) -> None:
        self.routes = routes
        self._guard = guard

    async def list(self, cursor: str | None, ctx: CallContext) -> types.ListResourcesResult:
        """One page of the resources ``ctx`` may see."""
        guard = self._guard

        def keep(upstream: UpstreamResources, resource: types.Resource) -> types.Resource | None:
            if not guard.resource_visible(resource.uri, upstream.name, ctx):
                return None
            uri = self.routes.gateway_uri(upstream.name, resource.uri)
            return served_entry(resource, upstream, uri=uri)

        async with contextlib.AsyncExitStack() as stack:
            upstreams = await self.routes.serving(ctx, stack)
            entries, following = await collect("resources", upstreams, cursor, keep)
        return types.ListResourcesResult(resources=entries, next_cursor=following)

    async def templates(
        self, cursor: str | None, ctx: CallContext
    ) -> types.ListResourceTemplatesResult:
        """One page of the resource templates ``ctx`` may see."""
        guard = self._guard

        def keep(
            upstream: UpstreamResources, template: types.ResourceTemplate
        ) -> types.ResourceTemplate | None:
            if not guard.resource_visible(template.uri_template, upstream.name, ctx):
                return None
            uri = self.routes.gateway_uri(upstream.name, template.uri_template)
            return served_entry(template, upstream, uri_template=uri)

        async with contextlib.AsyncExitStack() as stack:
            upstreams = await self.routes.serving(ctx, stack)
            entries, following = await collect("templates", upstreams, cursor, keep)
        return types.ListResourceTemplatesResult(resource_templates=entries, next_cursor=following)

    async def read(self, uri: str, ctx: CallContext) -> types.ReadResourceResult:
        """Read the resource at gateway URI ``uri``, as the guard allows.

        Raises:
            ResourceNotFound: ``uri`` names no server, one without resources, or a resource the
                server does not have or the guard hides: one answer, naming ``uri``.
            ResourceDenied: the caller has no credentials for its (per-caller) server.
            UpstreamError: the server is down, failed or answered with an error.
            LockgateError: the guard refused the read.
        """
        route = self.routes.uri(uri)
        if route.upstream.lacks("resources"):
            raise ResourceNotFound(uri)

        async def read() -> types.ReadResourceResult:
            async with route.serving(ctx) as upstream:
                if upstream.lacks("resources"):
                    raise ResourceNotFound(route.target)
                return await self._read(route, upstream)

        try:
            return await self._guard.read_resource(route.target, route.server, ctx, read)
        except ResourceNotFound:  # in the server's own terms: hidden and missing read alike
            raise ResourceNotFound(uri) from None
        except NotConnected as exc:
            raise ResourceDenied(uri, str(exc), data=not_connected_data(exc)) from None

    async def _read(self, route: Route, upstream: UpstreamResources) -> types.ReadResourceResult:
        result = await upstream.read(route.target)
        contents = [
            content.model_copy(update={"uri": self.routes.gateway_uri(route.server, content.uri)})
            for content in result.contents
        ]
        meta = served_meta(result.meta, route.server)
        return types.ReadResourceResult(contents=contents, _meta=meta)
