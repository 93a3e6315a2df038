"""Per-principal upstreams: the pool of a server whose callers bring their own credentials
(``servers[].credentials.mode`` other than ``shared``), its connections made by `build_upstream`
with each principal's credential from the vault.

Each non-shared mode has a credential provider (`PROVIDERS`), gathered by server in
`build_credentials`: what the pool asks for a principal's credential, and (``oauth``) how they
connect. ``secret`` reads the vault as is; ``oauth`` (`gateway.credentials.oauth`) keeps each
principal's grant there, its connections authenticating with the grant's `httpx2.Auth` behind an
`OAuthGuard`; ``token_exchange`` (`gateway.credentials.token_exchange`) exchanges each caller's
JWT for the upstream's token, its connections authenticating with it behind a
`TokenExchangeGuard`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig
from gateway.credentials import CredentialProvider, Credentials
from gateway.credentials.client_document import resolved
from gateway.credentials.flow_store import FlowStore
from gateway.credentials.guard import OAuthGuard
from gateway.credentials.locks import LocalLocks, PostgresLocks, RefreshLocks
from gateway.credentials.oauth import OAuthProvider
from gateway.credentials.oauth_connect import CALLBACK_PATH
from gateway.credentials.token_exchange import TokenExchangeProvider
from gateway.credentials.token_exchange_guard import TokenExchangeGuard
from gateway.vault import Vault
from gateway.wiring.upstreams import build_upstream
from gateway.wiring.vault import flow_store
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.upstream.per_principal import ConnectGate, PerPrincipalToolset
from toolsets.upstream.server import MCPServerToolset

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend

__all__ = ["PROVIDERS", "Coordination", "ServerSecrets", "build_credentials", "build_pool"]


@dataclass(frozen=True, slots=True)
class Coordination:
    """What the providers of one gateway share (with the other replicas, on PostgreSQL): one
    refresh of a grant at a time, and where started ``oauth`` connects are kept."""

    locks: RefreshLocks
    flows: FlowStore


class ServerSecrets:
    """The vault, bound to one server (what `PerPrincipalToolset` reads)."""

    mode = "secret"

    def __init__(self, vault: Vault, server: str) -> None:
        self.vault, self.server = vault, server

    async def connected(self, principal: str) -> bool:
        return await self.secret(principal) is not None

    async def secret(self, principal: str) -> str | None:
        return await self.vault.secret(self.server, principal)

    async def principals(self) -> list[str]:
        found = await self.vault.connections()
        return [c.principal for c in found if c.server == self.server]


def redirect_uri(config: GatewayConfig) -> str:
    """The gateway's callback URL: ``auth.public_url``, else where it listens."""
    base = config.auth.public_url or f"http://{config.listen.host}:{config.listen.port}"
    return base.rstrip("/") + CALLBACK_PATH


def _secret(
    config: GatewayConfig, server: ServerConfig, vault: Vault, along: Coordination
) -> ServerSecrets:
    return ServerSecrets(vault, server.name)


def _oauth(
    config: GatewayConfig, server: ServerConfig, vault: Vault, along: Coordination
) -> OAuthProvider:
    assert server.url is not None  # an oauth server is http or sse (checked at load)
    return OAuthProvider(
        server.name,
        server.url,
        resolved(server.credentials, config.auth.public_url),  # the gateway's own CIMD
        vault,
        locks=along.locks,
        redirect_uri=redirect_uri(config),
        flows=along.flows,
    )


ProviderFactory = Callable[[GatewayConfig, ServerConfig, Vault, Coordination], CredentialProvider]


def _token_exchange(
    config: GatewayConfig, server: ServerConfig, vault: Vault, along: Coordination
) -> TokenExchangeProvider:
    exchange = server.credentials.exchange
    assert exchange is not None  # checked at load, as the url of an http server
    assert server.url is not None
    secret = os.environ.get(exchange.client.secret.removeprefix("env:"), "")
    return TokenExchangeProvider(server.name, server.url, exchange, secret, vault.record)


PROVIDERS: Final[dict[str, ProviderFactory]] = {
    "secret": _secret,
    "oauth": _oauth,
    "token_exchange": _token_exchange,
}
"""The credential provider of each non-shared ``credentials.mode``, given the config, the
server, the vault and what they share (`Coordination`)."""


def build_credentials(
    config: GatewayConfig, vault: Vault, shared: PostgresBackend | None = None
) -> Credentials:
    """The provider of every enabled per-principal server (refresh locks and started connects
    in PostgreSQL when the vault is there)."""
    locks: RefreshLocks = LocalLocks() if shared is None else PostgresLocks(shared.database)
    along = Coordination(locks, flow_store(config, shared))
    return Credentials(
        {
            s.name: PROVIDERS[s.credentials.mode](config, s, vault, along)
            for s in config.enabled_servers()
            if s.credentials.per_principal
        }
    )


def build_pool(
    config: GatewayConfig,
    server: ServerConfig,
    vault: Vault,
    *,
    on_tools_changed: ToolsChangedHandler | None = None,
    connect: ConnectGate | None = None,
    credentials: Credentials | None = None,
) -> tuple[PerPrincipalToolset, Toolset]:
    """The pool of ``server``'s per-principal connections, and what serves it; told by ``vault``
    when a secret of it is set or revoked (the connection opens, or closes); a call of a caller not
    connected yet waits at ``connect`` (`gateway.connect`). Its provider is ``credentials``' (one is
    made when not given); an ``oauth`` pool is behind an `OAuthGuard`."""
    settings = server.credentials
    found = None if credentials is None else credentials.providers.get(server.name)
    along = Coordination(LocalLocks(), flow_store(config, None))
    provider = found or PROVIDERS[settings.mode](config, server, vault, along)
    oauth = provider if isinstance(provider, OAuthProvider | TokenExchangeProvider) else None

    def connection(principal: str, secret: str, relisted: ToolsChangedHandler) -> MCPServerToolset:
        if oauth is not None:  # the "secret" names the grant; the auth carries its token
            auth = oauth.auth(principal)
            return build_upstream(config, server, on_tools_changed=relisted, auth=auth)
        return build_upstream(config, server, on_tools_changed=relisted, secret=secret)

    pool = PerPrincipalToolset(
        server.name,
        connection,
        provider,
        idle_timeout=settings.idle_timeout,
        max_connections=settings.max_connections,
        connect_timeout=server.connect_timeout,
        on_tools_changed=on_tools_changed,
        connect=connect,
    )

    async def changed(changed_server: str, principal: str) -> bool | None:
        return await pool.warm(principal) if changed_server == server.name else None

    vault.listeners.append(changed)
    if isinstance(oauth, TokenExchangeProvider):
        return pool, TokenExchangeGuard(pool, oauth)
    return pool, pool if oauth is None else OAuthGuard(pool, oauth)
