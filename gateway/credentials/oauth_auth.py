"""`GrantAuth`: the `httpx2.Auth` of one principal's connection to an ``oauth`` upstream.

It adds the principal's access token (refreshed before use when it is about to expire). On a
401 it refreshes once (another replica may have done so already) and tries again; a second 401,
a refused refresh, or a 403 ``insufficient_scope`` marks the grant for reconnect. It never raises
inside the HTTP exchange (the MCP transport would tear the connection down) and never starts an
interactive flow: what went wrong is left with the provider, whose guard tells the caller.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

import httpx2
from mcp.client.auth.utils import extract_field_from_www_auth, extract_scope_from_www_auth

__all__ = ["GrantAuth", "TokenSource"]


class TokenSource(Protocol):
    """What `GrantAuth` asks of the ``oauth`` provider."""

    async def request_token(self, principal: str) -> str | None:
        """The access token to send now, or None."""
        ...

    async def unauthorized(self, principal: str, used: str) -> str | None:
        """A new token after ``used`` was refused (401), or None (the grant is marked)."""
        ...

    async def rejected(self, principal: str) -> None:
        """A refreshed token was refused too: the grant is marked for reconnect."""
        ...

    async def step_up(self, principal: str, scope: str | None) -> None:
        """The upstream wants a larger scope: the grant is marked, the next connect asks it."""
        ...


class GrantAuth(httpx2.Auth):
    """Bearer authentication with ``principal``'s grant from ``source``."""

    def __init__(self, source: TokenSource, principal: str) -> None:
        self.source, self.principal = source, principal

    def _bearer(self, request: httpx2.Request, token: str | None) -> None:
        if token is not None:
            request.headers["Authorization"] = f"Bearer {token}"

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self.source.request_token(self.principal)
        self._bearer(request, token)
        response = yield request
        if response.status_code == 401 and token is not None:
            renewed = await self.source.unauthorized(self.principal, token)
            if renewed is None:
                return
            self._bearer(request, renewed)
            response = yield request
            if response.status_code == 401:
                await self.source.rejected(self.principal)
        elif (
            response.status_code == 403
            and extract_field_from_www_auth(response, "error") == "insufficient_scope"
        ):
            await self.source.step_up(self.principal, extract_scope_from_www_auth(response))
