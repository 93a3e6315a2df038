"""`OAuthGuard`: in front of an ``oauth`` server's pool, each call's grant is checked (and its
token refreshed when about to expire) before the call, and what went wrong while authenticating
is told after it, as a clear result naming the server and what to do: never a silent retry,
never another principal's token.

- a grant marked for reconnect (refresh refused, grant revoked upstream, a 401 with a fresh
  token, a 403 ``insufficient_scope``): refused ``not_connected``, run ``lockgate connections
  connect SERVER``;
- the authorization server down while refreshing: failed ``upstream_unavailable``, try later;
- no grant at all: the pool's own answer (held until the caller connects, or refused).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from gateway.credentials.errors import NeedsReconnect
from gateway.credentials.oauth import Failure, OAuthProvider
from gateway.credentials.oauth_tokens import AuthServerDown
from toolsets.context import CallContext
from toolsets.errors import LockgateError
from toolsets.refusal import Refusal, Unblock, failure_result, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import PerPrincipalToolset, principal_key
from toolsets.wrapper import WrapperToolset

__all__ = ["OAuthGuard"]


class OAuthGuard(WrapperToolset):
    """``pool``'s calls, with ``provider``'s grants checked before and failures told after."""

    def __init__(self, pool: PerPrincipalToolset, provider: OAuthProvider) -> None:
        super().__init__(pool)
        self.pool, self.provider = pool, provider

    def _reconnect(self, message: str, tool: ToolDef, reason: str | None = None) -> ToolResult:
        server = self.provider.server
        refusal = Refusal(
            kind="not_connected",
            message=message,
            unblock=Unblock(action="connect", url=f"/api/connections/{server}/connect"),
            details={"server": server, **({"reason": reason} if reason else {})},
        )
        return refusal_result(refusal, tool=tool)

    def _told(self, failure: Failure, tool: ToolDef) -> ToolResult:
        if failure.kind == "reconnect":
            return self._reconnect(failure.message, tool)
        return failure_result(failure.message, "upstream_unavailable", server=self.provider.server)

    def _unlisted(self, key: str) -> bool:
        """No catalogue yet, and none of ``key``'s own: they may have connected on another
        replica (the vault is shared, its listeners are not)."""
        return not self.pool.catalogues.common and key not in self.pool.entries

    def variant(self, ctx: CallContext) -> Hashable:
        key = principal_key(ctx.principal)
        return ("unlisted", key) if self._unlisted(key) else self.pool.variant(ctx)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        key = principal_key(ctx.principal)
        if self._unlisted(key) and await self.provider.connected(key):
            await self.pool.warm(key, notify=False)  # list through their connection
        return await self.pool.get_tools(ctx)

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        principal, server = principal_key(ctx.principal), self.provider.server
        try:
            held = await self.provider.grants.held(principal)
            if held is not None:
                await self.provider.prepare(principal, held)
            elif getattr(self.pool, "connect", None) is None:  # nobody holds the call
                never = (
                    f"{server!r} is reached with each caller's own account and you have not "
                    f"connected yours: run `lockgate connections connect {server}`, then call again"
                )
                return self._reconnect(never, tool)
        except NeedsReconnect as exc:
            return self._reconnect(str(exc), tool, exc.reason)
        except AuthServerDown as exc:
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
