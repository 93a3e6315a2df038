"""`PrincipalConnections`: the chain's top learns which per-caller servers the caller has
connected, so that policies read them (``principal.connections``: a list of server names), to
hide the tools of servers a caller has not connected, or to explain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio

from gateway.vault import Vault
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import principal_key
from toolsets.wrapper import WrapperToolset

__all__ = ["PrincipalConnections", "VaultConnections"]

FRESH = 5.0
"""Seconds a principal's list is reused (another replica's connection shows after it)."""


class VaultConnections:
    """Each principal's connected servers, read from the vault and kept briefly; a connection
    made or revoked through this process is seen at once (the vault tells `changed`)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._known: dict[str, tuple[float, frozenset[str]]] = {}

    async def servers(self, principal: str) -> frozenset[str]:
        now = anyio.current_time()
        found = self._known.get(principal)
        if found is not None and now - found[0] < FRESH:
            return found[1]
        servers = frozenset(c.server for c in await self.vault.connections(principal))
        if len(self._known) > 10_000:
            self._known.clear()
        self._known[principal] = (now, servers)
        return servers

    async def changed(self, server: str, principal: str) -> None:
        """The vault's listener: forget ``principal``'s list."""
        self._known.pop(principal, None)


class PrincipalConnections(WrapperToolset):
    """Sets ``ctx.principal.connections`` for everything below."""

    def __init__(self, wrapped: Toolset, connections: VaultConnections) -> None:
        super().__init__(wrapped)
        self.connections = connections

    async def _known(self, ctx: CallContext) -> CallContext:
        found = await self.connections.servers(principal_key(ctx.principal))
        if found == ctx.principal.connections:
            return ctx
        return replace(ctx, principal=replace(ctx.principal, connections=found))

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return await self.wrapped.get_tools(await self._known(ctx))

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        return await self.wrapped.call_tool(name, args, await self._known(ctx), tool)
