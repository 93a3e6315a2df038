"""`CallerResources`: the resources, prompts and completions of a server reached with each
caller's own credentials (a `PerPrincipalToolset`), each request over the caller's connection.

Nothing of such a server is known before a caller's connection says it, so it neither offers
nor lacks anything as a whole: `bound` opens the caller's connection (as their tool call would,
after what the server's guard checks first: an ``oauth`` grant usable and its token fresh, a
``token_exchange`` caller's token exchanged: `gateway.credentials.readiness`) and gives its
`UpstreamResources`. A caller who cannot be connected is refused ``not_connected``
(`NotConnected`), told how to connect; nobody's request ever goes over another's connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from gateway.credentials.oauth import OAuthProvider
from gateway.credentials.readiness import exchanged, granted
from gateway.credentials.token_exchange import TokenExchangeProvider
from gateway.resources.upstream import Capability, UpstreamResources
from toolsets.context import CallContext
from toolsets.upstream.per_principal import PerPrincipalToolset, principal_key

__all__ = ["CallerResources"]


class CallerResources:
    """One per-principal server's requests beyond tools (see the module docstring)."""

    def __init__(self, pool: PerPrincipalToolset) -> None:
        self.pool = pool

    @property
    def name(self) -> str:
        """The server's name."""
        return self.pool.name

    def offers(self, capability: Capability) -> bool:
        """Never as a whole: only a caller's connection says (`bound`)."""
        return False

    def lacks(self, capability: Capability) -> bool:
        """Never as a whole: only a caller's connection says (`bound`)."""
        return False

    @contextlib.asynccontextmanager
    async def bound(self, ctx: CallContext) -> AsyncIterator[UpstreamResources]:
        """The server as ``ctx``'s principal reaches it: over their own connection, open and
        kept from closing while in use.

        Raises:
            NotConnected: the principal has no usable credentials for the server.
            UpstreamError: their connection could not be opened (or authenticated now).
        """
        provider = self.pool.secrets
        if isinstance(provider, OAuthProvider):
            await granted(provider, principal_key(ctx.principal), verb="ask")
        elif isinstance(provider, TokenExchangeProvider):
            await exchanged(provider, ctx, verb="ask")
        async with self.pool.connection(ctx) as toolset:
            yield UpstreamResources(toolset)
