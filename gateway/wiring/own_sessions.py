"""Per-principal sessions of a server with shared credentials (``servers[].sessions``, by
default for a server whose config relays ``roots``): its own session lists the catalogue and
serves resources and prompts; each principal's calls go over a session of their own, so what a
server keeps per session (the roots a client sent) never reaches another principal.
"""

from __future__ import annotations

from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig
from gateway.wiring.upstreams import build_upstream
from toolsets.abstract import ToolsChangedHandler
from toolsets.upstream.per_principal import PerPrincipalToolset
from toolsets.upstream.server import MCPServerToolset

__all__ = ["AnyPrincipal", "session_pool"]


class AnyPrincipal:
    """Every principal may connect, with the server's own credentials (no secret)."""

    async def secret(self, principal: str) -> str | None:
        return ""

    async def principals(self) -> list[str]:
        return []


def session_pool(
    config: GatewayConfig,
    server: ServerConfig,
    shared: MCPServerToolset,
    *,
    on_tools_changed: ToolsChangedHandler | None = None,
) -> PerPrincipalToolset:
    """``server``'s calls over one session per principal; ``shared``, its own session, lists
    the catalogue every principal starts from."""

    def connection(principal: str, secret: str, relisted: ToolsChangedHandler) -> MCPServerToolset:
        return build_upstream(config, server, on_tools_changed=relisted)

    return PerPrincipalToolset(
        server.name,
        connection,
        AnyPrincipal(),
        idle_timeout=server.credentials.idle_timeout,
        max_connections=server.credentials.max_connections,
        connect_timeout=server.connect_timeout,
        on_tools_changed=on_tools_changed,
        shared=shared,
    )
