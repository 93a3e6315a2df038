"""`CallerResources`: the resources, prompts and completions of a server reached with each
caller's own credentials (a `PerPrincipalToolset`), each request over the caller's connection.

Nothing of such a server is known before a caller's connection says it, so it neither offers
nor lacks anything as a whole: `bound` opens the caller's connection (as their tool call would,
after what the server's guard checks first: an ``oauth`` grant usable and its token fresh, a
``token_exchange`` caller's token exchanged) and gives its `UpstreamResources`. A caller who
cannot be connected is refused ``not_connected`` (`NotConnected`), told how to connect; nobody's
request ever goes over another's connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from gateway.credentials.errors import NeedsReconnect
from gateway.credentials.oauth import OAuthProvider
from gateway.credentials.oauth_tokens import AuthServerDown
from gateway.credentials.token_exchange import (
    ExchangeFailed,
    ExchangeUnavailable,
    TokenExchangeProvider,
)
from gateway.resources.upstream import Capability, UpstreamResources
from toolsets.context import CallContext
from toolsets.errors import UpstreamError
from toolsets.refusal import Refusal, Unblock
from toolsets.upstream.per_principal import NotConnected, PerPrincipalToolset, principal_key

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
            await _granted(provider, principal_key(ctx.principal))
        elif isinstance(provider, TokenExchangeProvider):
            await _exchanged(provider, ctx)
        async with self.pool.connection(ctx) as toolset:
            yield UpstreamResources(toolset)


async def _granted(provider: OAuthProvider, principal: str) -> None:
    """``principal``'s grant usable and its token fresh, as `OAuthGuard` has it before a call."""
    server = provider.server
    try:
        held = await provider.grants.held(principal)
        if held is None:
            message = (
                f"{server!r} is reached with each caller's own account and you have not "
                f"connected yours: run `lockgate connections connect {server}`, then ask again"
            )
            raise NotConnected(_refusal(server, message, f"/api/connections/{server}/connect"))
        await provider.prepare(principal, held)
    except NeedsReconnect as exc:
        url = f"/api/connections/{server}/connect"
        raise NotConnected(_refusal(server, str(exc), url, reason=exc.reason)) from None
    except AuthServerDown as exc:
        raise UpstreamError(str(exc), server=server) from None


async def _exchanged(provider: TokenExchangeProvider, ctx: CallContext) -> None:
    """The caller's token exchanged, as `TokenExchangeGuard` has it before a call."""
    server, bearer = provider.server, ctx.principal.bearer
    if bearer is None:
        message = (
            f"{server!r} is reached with your identity provider's token (token exchange), and "
            "you asked without one (a static token): ask with a JWT from the identity provider "
            "the gateway trusts (auth.jwt)"
        )
        raise NotConnected(_refusal(server, message, mode=provider.mode))
    principal = principal_key(ctx.principal)
    try:
        await provider.prepare(principal, bearer)
    except (ExchangeFailed, ExchangeUnavailable) as exc:
        failure = provider.take_failure(principal)
        message = failure.message if failure is not None else str(exc)
        if isinstance(exc, ExchangeFailed):
            raise NotConnected(_refusal(server, message, mode=provider.mode)) from None
        raise UpstreamError(message, server=server) from None


def _refusal(server: str, message: str, url: str | None = None, **details: Any) -> Refusal:
    """The ``not_connected`` refusal of a request to ``server``: connect at ``url``, or (none)
    nothing the caller can do here."""
    unblock = Unblock(action="connect", url=url) if url else Unblock(action="none")
    facts = {"server": server, **details}
    return Refusal(kind="not_connected", message=message, unblock=unblock, details=facts)
