"""The HTTP edge of ``/mcp``: resolves the calling agent from its bearer token."""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.auth import Authenticator, bearer_token
from gateway.downstream import PRINCIPAL_SCOPE_KEY
from toolsets.context import ANONYMOUS

__all__ = ["AgentAuthMiddleware"]


class AgentAuthMiddleware:
    """Requires an agent token when agents are configured; open (anonymous) otherwise.

    The token is consumed here: nothing downstream of the gateway ever sees it. The principal
    is also handed to the SDK as ``scope["user"]`` (without the token), so a handshake-era
    session answers only the agent that opened it: any other agent gets 404, as for an unknown
    session.
    """

    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self.authenticator.required("agent"):
            token = bearer_token(Headers(scope=scope).get("authorization"))
            found = self.authenticator.authenticate(token, "agent")
            if found is None:
                response = JSONResponse(
                    {
                        "error": "invalid_token",
                        "error_description": "a valid agent token is required",
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="lockgate"'},
                )
                await response(scope, receive, send)
                return
            principal = found
            owner = AccessToken(token="", client_id=principal.id, scopes=sorted(principal.roles))
            scope["user"] = AuthenticatedUser(owner)
        scope[PRINCIPAL_SCOPE_KEY] = principal
        await self.app(scope, receive, send)
