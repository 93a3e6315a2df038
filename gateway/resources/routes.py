"""`Routes`: which upstream a gateway resource URI or exposed prompt name belongs to, and back.

Names and URIs carry the server's prefix (its name unless the config gives ``prefix``):
prompts as ``{prefix}__{name}`` like tools, resources as ``lockgate://{prefix}/{uri}``
(`toolsets.resource_uris`). A prefix matches ``[a-z0-9][a-z0-9-]*``, so the first ``__`` or
``/`` ends it; the rest is the upstream's own name or URI, verbatim, found by a map of the
prefixes, never guessed. A server reached with each caller's own credentials (`CallerResources`)
is routed like any other; what it serves a caller is their own connection's (`Route.serving`,
`Routes.serving`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from gateway.resources.callers import CallerResources
from gateway.resources.upstream import UpstreamResources
from toolsets.context import CallContext
from toolsets.errors import LockgateError, PromptNotFound, ResourceNotFound
from toolsets.prefixed import SEPARATOR
from toolsets.resource_uris import gateway_uri, split_gateway_uri
from toolsets.upstream.per_principal import PerPrincipalToolset
from toolsets.upstream.server import MCPServerToolset

__all__ = ["Route", "Routes", "Upstream"]

log = logging.getLogger("lockgate.surface")
Upstream = UpstreamResources | CallerResources
"""A server as routed: one session for everyone, or each caller's own connection."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a gateway URI or exposed prompt name leads.

    Attributes:
        upstream: The server that owns it.
        prefix: That server's prefix.
        target: The server's own URI (or template) or prompt name.
    """

    upstream: Upstream
    prefix: str
    target: str

    @property
    def server(self) -> str:
        """The owning server's name."""
        return self.upstream.name

    @contextlib.asynccontextmanager
    async def serving(self, ctx: CallContext) -> AsyncIterator[UpstreamResources]:
        """The owning server as it serves ``ctx``: its session, or the caller's own connection.

        Raises:
            NotConnected: the caller has no credentials for a per-caller server.
            UpstreamError: their connection could not be opened.
        """
        if isinstance(self.upstream, UpstreamResources):
            yield self.upstream
            return
        async with self.upstream.bound(ctx) as upstream:
            yield upstream


class Routes:
    """The upstream servers in config order, by prefix (see the module docstring).

    Args:
        upstreams: The upstream toolsets by server name.
        prefixes: Each server's prefix, by server name (its order: the config's).
        pools: The servers reached with each caller's own credentials, by name.
    """

    def __init__(
        self,
        upstreams: Mapping[str, MCPServerToolset],
        prefixes: Mapping[str, str],
        pools: Mapping[str, PerPrincipalToolset] | None = None,
    ) -> None:
        self.upstreams = {name: UpstreamResources(toolset) for name, toolset in upstreams.items()}
        """The servers with one session for everyone."""
        callers = {name: CallerResources(pool) for name, pool in (pools or {}).items()}
        every: dict[str, Upstream] = {**self.upstreams, **callers}
        order = [name for name in prefixes if name in every]
        order += [name for name in every if name not in order]
        self.every = {name: every[name] for name in order}
        """Every server, in config order."""
        self._prefixes = {name: prefixes.get(name, name) for name in self.every}
        self._by_prefix = {self._prefixes[name]: up for name, up in self.every.items()}

    async def serving(
        self, ctx: CallContext, stack: contextlib.AsyncExitStack
    ) -> list[UpstreamResources]:
        """Every server in config order as it serves ``ctx`` (`Route.serving`), its own
        connections held open on ``stack``; a per-caller server they cannot reach (no
        credentials, or their connection failed) is left out, as a server that is down."""
        serving: list[UpstreamResources] = []
        for upstream in self.every.values():
            if isinstance(upstream, UpstreamResources):
                serving.append(upstream)
                continue
            try:
                serving.append(await stack.enter_async_context(upstream.bound(ctx)))
            except LockgateError as exc:
                log.debug("listing without server %s: %s", upstream.name, exc)
        return serving

    def prefix(self, server: str) -> str:
        """The prefix of ``server``."""
        return self._prefixes[server]

    def gateway_uri(self, server: str, uri: str) -> str:
        """The gateway URI of ``server``'s own ``uri`` (or template)."""
        return gateway_uri(self._prefixes[server], uri)

    def exposed_name(self, server: str, name: str) -> str:
        """The exposed name of ``server``'s own prompt ``name``."""
        return f"{self._prefixes[server]}{SEPARATOR}{name}"

    def uri(self, uri: str) -> Route:
        """The route of a gateway resource URI (or template).

        Raises:
            ResourceNotFound: not a gateway URI, or no server has its prefix.
        """
        split = split_gateway_uri(uri)
        upstream = self._by_prefix.get(split[0]) if split is not None else None
        if split is None or upstream is None:
            raise ResourceNotFound(uri)
        return Route(upstream, split[0], split[1])

    def prompt(self, name: str) -> Route:
        """The route of an exposed prompt name.

        Raises:
            PromptNotFound: no server has its prefix.
        """
        prefix, separator, own = name.partition(SEPARATOR)
        upstream = self._by_prefix.get(prefix)
        if not separator or not own or upstream is None:
            raise PromptNotFound(name)
        return Route(upstream, prefix, own)
