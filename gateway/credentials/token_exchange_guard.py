"""`TokenExchangeGuard`: in front of a ``token_exchange`` server's pool, each call's token is
exchanged (when none is held that is not about to expire) before the call, and what went wrong
is told after it, as a clear result naming the server and what to do; never a silent retry,
never another caller's token.

- a caller without an identity-provider token (a static token, stdio, in process): refused
  ``not_connected``, call with a JWT from the provider ``auth.jwt`` trusts;
- the exchange refused: refused ``not_connected``, sign in to the provider again;
- the provider down: failed ``upstream_unavailable``, try later;
- the upstream refusing the exchanged token (401, 403): failed ``upstream_unavailable``, the
  caller's connection closed, an operator to check the upstream and the scopes.

A listing by a caller with a token exchanges it too, and opens their connection, so they are
served the tools their own connection lists: until then the caller is a catalogue variant of
their own (`variant`), so no cached listing stands in for theirs.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import Any

from gateway.credentials.readiness import exchanged, refusal
from gateway.credentials.token_exchange import (
    ExchangeFailed,
    ExchangeUnavailable,
    Failure,
    TokenExchangeProvider,
)
from toolsets.context import CallContext
from toolsets.errors import UpstreamError
from toolsets.refusal import failure_result, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import NotConnected, PerPrincipalToolset, principal_key
from toolsets.wrapper import WrapperToolset

__all__ = ["TokenExchangeGuard"]

log = logging.getLogger("lockgate.credentials")


class TokenExchangeGuard(WrapperToolset):
    """``pool``'s calls, each with the caller's exchanged token ready (`TokenExchangeProvider`)."""

    def __init__(self, pool: PerPrincipalToolset, provider: TokenExchangeProvider) -> None:
        super().__init__(pool)
        self.pool, self.provider = pool, provider

    def _refused(self, message: str, tool: ToolDef) -> ToolResult:
        server, mode = self.provider.server, self.provider.mode
        return refusal_result(refusal(server, message, mode=mode), tool=tool)

    def _told(self, failure: Failure, tool: ToolDef) -> ToolResult:
        if failure.kind == "refused":
            return self._refused(failure.message, tool)
        return failure_result(failure.message, "upstream_unavailable", server=self.provider.server)

    def variant(self, ctx: CallContext) -> Hashable:
        key = principal_key(ctx.principal)
        if ctx.principal.bearer is None or ctx.inspect_only or self.provider.ready(key):
            return self.pool.variant(ctx)
        return ("unexchanged", key)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        bearer, key = ctx.principal.bearer, principal_key(ctx.principal)
        if bearer is not None and not ctx.inspect_only and not self.provider.ready(key):
            try:  # not for an inspection by someone else: nothing exchanged in their name
                await self.provider.prepare(key, bearer)
                if not await self.pool.warm(key, notify=False):  # we are inside a listing
                    self._close(key)  # no reconnecting in the background: the call tries anew
            except (ExchangeFailed, ExchangeUnavailable) as exc:  # a call will say so
                log.debug("%s: no listing of its own for %s (%s)", self.provider.server, key, exc)
        return await self.pool.get_tools(ctx)

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        key = principal_key(ctx.principal)
        try:
            await exchanged(self.provider, ctx, verb="call")
        except NotConnected as exc:
            return refusal_result(exc.refusal, tool=tool)
        except UpstreamError as exc:
            return failure_result(str(exc), "upstream_unavailable", server=self.provider.server)
        result = await self.pool.call_tool(name, args, ctx, tool)
        failure = self.provider.take_failure(key)
        if failure is not None and result.is_error:
            self._close(key)  # no reconnecting in the background with a refused token
            return self._told(failure, tool)
        return result

    def _close(self, key: str) -> None:
        self.pool.drop(key)
        self.provider.forget(key)
