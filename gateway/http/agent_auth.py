"""The HTTP edge of ``/mcp``: resolves the calling agent from its bearer token (static or JWT),
and answers a call its token lacks the scopes for with the step-up challenge."""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.auth.tokens import Authenticator, Identity, bearer_token
from gateway.http.step_up import StepUp
from gateway.mcp.server import PRINCIPAL_SCOPE_KEY
from toolsets.context import ANONYMOUS

__all__ = ["AgentAuthMiddleware"]


class AgentAuthMiddleware:
    """Requires an agent token when agents are configured; open (anonymous) otherwise.

    The token is consumed here: nothing downstream of the gateway ever sees it. The principal
    is also handed to the SDK as ``scope["user"]`` (without the token), so a handshake-era
    session answers only the agent that opened it: any other agent gets 404, as for an unknown
    session. With ``step_up``, a ``tools/call`` whose token lacks the tool's scopes is answered
    ``403 insufficient_scope`` here, in both eras, before either MCP path sees it.
    """

    def __init__(
        self, app: ASGIApp, authenticator: Authenticator, step_up: StepUp | None = None
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.step_up = step_up

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = ANONYMOUS
        if self.authenticator.required("agent"):
            token = bearer_token(Headers(scope=scope).get("authorization"))
            identity = await self.authenticator.identify(token)
            found = identity.holding("agent")
            if found is None:
                await self._refused(scope, identity)(scope, receive, send)
                return
            principal = found.principal
            owner = AccessToken(token="", client_id=principal.id, scopes=sorted(principal.roles))
            scope["user"] = AuthenticatedUser(owner)
        scope[PRINCIPAL_SCOPE_KEY] = principal
        if self.step_up is not None:
            refusal, receive = await self.step_up.check(scope, receive, principal)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refused(self, scope: Scope, identity: Identity) -> Response:
        """401 (with the resource metadata challenge and the agent scope), or 403
        ``insufficient_scope`` for a valid JWT that the agent scope would make an agent's."""
        metadata = self.authenticator.metadata
        scopes = metadata.scopes_for("agent")
        if identity.valid:
            description = "this token is not an agent token"
            if identity.via_jwt and scopes:
                return metadata.insufficient_scope(
                    scope, "/mcp", description=description, scopes=scopes
                )
        else:
            description = identity.problem or "a valid agent token is required"
        return metadata.unauthorized(
            scope, "/mcp", presented=identity.presented, description=description, scopes=scopes
        )
