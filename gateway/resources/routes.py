"""`Routes`: which upstream a gateway resource URI or exposed prompt name belongs to, and back.

Names and URIs carry the server's prefix (its name unless the config gives ``prefix``):
prompts as ``{prefix}__{name}`` like tools, resources as ``lockgate://{prefix}/{uri}``
(`toolsets.resource_uris`). A prefix matches ``[a-z0-9][a-z0-9-]*``, so the first ``__`` or
``/`` ends it; the rest is the upstream's own name or URI, verbatim, found by a map of the
prefixes, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.resources.upstream import UpstreamResources
from toolsets.errors import PromptNotFound, ResourceNotFound
from toolsets.prefixed import SEPARATOR
from toolsets.resource_uris import gateway_uri, split_gateway_uri
from toolsets.upstream.server import MCPServerToolset

__all__ = ["Route", "Routes"]


@dataclass(frozen=True, slots=True)
class Route:
    """Where a gateway URI or exposed prompt name leads.

    Attributes:
        upstream: The server that owns it.
        prefix: That server's prefix.
        target: The server's own URI (or template) or prompt name.
    """

    upstream: UpstreamResources
    prefix: str
    target: str

    @property
    def server(self) -> str:
        """The owning server's name."""
        return self.upstream.name


class Routes:
    """The upstream servers in config order, by prefix (see the module docstring).

    Args:
        upstreams: The upstream toolsets by server name.
        prefixes: Each server's prefix, by server name.
    """

    def __init__(
        self, upstreams: Mapping[str, MCPServerToolset], prefixes: Mapping[str, str]
    ) -> None:
        self.upstreams = {name: UpstreamResources(toolset) for name, toolset in upstreams.items()}
        self._prefixes = {name: prefixes.get(name, name) for name in upstreams}
        self._by_prefix = {self._prefixes[name]: up for name, up in self.upstreams.items()}

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
