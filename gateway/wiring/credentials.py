"""Per-principal upstreams: the pool of a server whose callers bring their own credentials
(``servers[].credentials.mode: secret``), its connections made by `build_upstream` with each
principal's secret from the vault.

Each non-shared mode has a credential provider (`PROVIDERS`): what the pool asks for a
principal's credential. ``secret`` reads the vault as is; ``oauth`` and ``token_exchange`` (not
built yet) add theirs here: an access token from the vault, refreshed, or exchanged at the
identity provider, handed to the same pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig
from gateway.vault import Vault
from gateway.wiring.upstreams import build_upstream
from toolsets.abstract import ToolsChangedHandler
from toolsets.upstream.per_principal import ConnectGate, PerPrincipalToolset, PrincipalSecrets
from toolsets.upstream.server import MCPServerToolset

__all__ = ["PROVIDERS", "ServerSecrets", "build_pool"]


class ServerSecrets:
    """The vault, bound to one server (what `PerPrincipalToolset` reads)."""

    def __init__(self, vault: Vault, server: str) -> None:
        self.vault, self.server = vault, server

    async def secret(self, principal: str) -> str | None:
        return await self.vault.secret(self.server, principal)

    async def principals(self) -> list[str]:
        found = await self.vault.connections()
        return [c.principal for c in found if c.server == self.server]


PROVIDERS: Final[dict[str, Callable[[Vault, str], PrincipalSecrets]]] = {"secret": ServerSecrets}
"""The credential provider of each non-shared ``credentials.mode``, given the vault and the
server's name."""


def build_pool(
    config: GatewayConfig,
    server: ServerConfig,
    vault: Vault,
    *,
    on_tools_changed: ToolsChangedHandler | None = None,
    connect: ConnectGate | None = None,
) -> PerPrincipalToolset:
    """The pool of ``server``'s per-principal connections; told by ``vault`` when a secret
    of it is set or revoked (the connection opens, or closes); a call of a caller not
    connected yet waits at ``connect`` (`gateway.connect`)."""

    def connection(principal: str, secret: str, relisted: ToolsChangedHandler) -> MCPServerToolset:
        return build_upstream(config, server, on_tools_changed=relisted, secret=secret)

    credentials = server.credentials
    pool = PerPrincipalToolset(
        server.name,
        connection,
        PROVIDERS[credentials.mode](vault, server.name),
        idle_timeout=credentials.idle_timeout,
        max_connections=credentials.max_connections,
        connect_timeout=server.connect_timeout,
        on_tools_changed=on_tools_changed,
        connect=connect,
    )

    async def changed(changed_server: str, principal: str) -> bool | None:
        return await pool.warm(principal) if changed_server == server.name else None

    vault.listeners.append(changed)
    return pool
