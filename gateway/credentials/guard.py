"""`OAuthGuard`: in front of an ``oauth`` server's pool, each call's grant is checked (and its
token refreshed when about to expire) before the call, and what went wrong while authenticating
is told after it, as a clear result naming the server and what to do: never a silent retry,
never another principal's token.

- a grant marked for reconnect (refresh refused, grant revoked upstream, a 401 with a fresh
  token, a 403 ``insufficient_scope``): refused ``not_connected``, run ``lockgate connections
  connect SERVER``;
- the authorization server down while refreshing: failed ``upstream_unavailable``, try later;
- no grant at all: the pool's own answer (held until the caller connects, or refused).

A listing by a principal this replica has no catalogue for opens their connection with their
grant (they may have connected on another replica), unless it is an inspection by someone else
(``CallContext.inspect_only``, the operator console): that one answers what is known.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from gateway.credentials.oauth import Failure, OAuthProvider
from gateway.credentials.readiness import granted, refusal
from toolsets.context import CallContext
from toolsets.errors import LockgateError, UpstreamError
from toolsets.refusal import failure_result, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import NotConnected, PerPrincipalToolset, principal_key
from toolsets.wrapper import WrapperToolset

__all__ = ["OAuthGuard"]


class OAuthGuard(WrapperToolset):
    """``pool``'s calls, with ``provider``'s grants checked before and failures told after."""

    def __init__(self, pool: PerPrincipalToolset, provider: OAuthProvider) -> None:
        super().__init__(pool)
        self.pool, self.provider = pool, provider

    def _reconnect(self, message: str, tool: ToolDef) -> ToolResult:
        server = self.provider.server
        url = f"/api/connections/{server}/connect"
        return refusal_result(refusal(server, message, url), tool=tool)

    def _told(self, failure: Failure, tool: ToolDef) -> ToolResult:
        if failure.kind == "reconnect":
            return self._reconnect(failure.message, tool)
        return failure_result(failure.message, "upstream_unavailable", server=self.provider.server)

    def _unlisted(self, key: str) -> bool:
        """No catalogue yet, and none of ``key``'s own: they may have connected on another
        replica (the vault is shared, its listeners are not)."""
        return not self.pool.catalogues.common and key not in self.pool.entries

    def _lists_through(self, ctx: CallContext) -> bool:
        """Whether ``ctx``'s listing may open its principal's connection to learn the
        catalogue: not when someone else inspects it (``inspect_only``: the last known)."""
        return not ctx.inspect_only and self._unlisted(principal_key(ctx.principal))

    def variant(self, ctx: CallContext) -> Hashable:
        # An inspection is cached as what it reads (the pool's), never as the principal's own
        # listing, which would then be served without opening their connection.
        if self._lists_through(ctx):
            return ("unlisted", principal_key(ctx.principal))
        return self.pool.variant(ctx)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        key = principal_key(ctx.principal)
        if self._lists_through(ctx) and await self.provider.connected(key):
            await self.pool.warm(key, notify=False)  # list through their connection
        return await self.pool.get_tools(ctx)

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        principal, server = principal_key(ctx.principal), self.provider.server
        try:  # no grant at all: the connect gate, when there is one, holds the call
            holds = self.pool.connect is not None
            await granted(self.provider, principal, verb="call", held_if_none=holds)
        except NotConnected as exc:
            return refusal_result(exc.refusal, tool=tool)
        except UpstreamError as exc:  # the authorization server down while refreshing
            return failure_result(str(exc), "upstream_unavailable", server=server)
        except LockgateError as exc:  # the vault unreadable: its error names the key and fix
            return failure_result(str(exc), "gateway_unavailable", server=server)
        try:
            result = await self.pool.call_tool(name, args, ctx, tool)
        except LockgateError:  # the upstream's JSON-RPC error for our HTTP 401/403
            if (failure := self.provider.take_failure(principal)) is None:
                raise
            return self._told(failure, tool)
        failure = self.provider.take_failure(principal)
        if failure is not None and result.is_error:
            return self._told(failure, tool)
        return result
