"""``/api/connections``: each caller registers, lists and revokes their own upstream secrets.

- ``PUT /api/connections/{server}`` with ``{"secret": "..."}``: set the caller's secret for a
  server in ``secret`` mode (an agent or approver token; always the caller's own principal);
- ``GET /api/connections``: the caller's own connections;
- ``GET /api/connections/all``: every principal's (approvers only: who is connected to what);
- ``DELETE /api/connections/{server}``: revoke the caller's secret (``oauth``: the grant, at the
  authorization server too when it has a revocation endpoint); the next call needs a connect;
- ``POST /api/connections/{server}/connect``: ``{"url": ...}``, where the caller connects their
  account to an ``oauth`` server (the gateway's ``/oauth/callback`` finishes it).

No answer ever carries a secret: a connection is its id, server, principal and times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.api.errors import BadRequest, read_json
from gateway.credentials import ConnectError, NoConnectFlow
from gateway.credentials.oauth import OAuthProvider
from gateway.gateway import Gateway
from gateway.vault import Vault
from gateway.vault.vault import MAX_SECRET
from toolsets.context import Principal
from toolsets.upstream.per_principal import TENANT_SEPARATOR, principal_key

__all__ = ["SecretBody", "connection_routes"]

Handler = Callable[[Request, Principal], Awaitable[Response]]
Guard = Callable[[Handler], Callable[[Request], Awaitable[Response]]]


class SecretBody(BaseModel):
    """``PUT /api/connections/{server}``."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    secret: str = Field(min_length=1, max_length=MAX_SECRET, description="The credential.")


class _Connections:
    def __init__(self, gateway: Gateway) -> None:
        config = gateway.config
        self.vault = gateway.parts.vault
        self.credentials = gateway.parts.credentials
        self.servers = {s.name for s in config.enabled_servers() if s.credentials.per_principal}

    def _vault(self) -> Vault:
        if self.vault is None:
            raise BadRequest("this gateway has no vault (no server uses per-caller credentials)")
        return self.vault

    def _server(self, request: Request) -> str:
        server: str = request.path_params["server"]
        if server not in self.servers:
            known = ", ".join(sorted(self.servers)) or "none"
            raise BadRequest(
                f"{server!r} is not a server with per-caller credentials (those are: {known})",
                404,
            )
        return server

    def _oauth(self, server: str) -> OAuthProvider | None:
        found = None if self.credentials is None else self.credentials.providers.get(server)
        return found if isinstance(found, OAuthProvider) else None

    async def put(self, request: Request, who: Principal) -> Response:
        server = self._server(request)
        if self._oauth(server) is not None:
            raise BadRequest(
                f"{server!r} is connected with your own account, not a secret: POST "
                f"/api/connections/{server}/connect (or run `lockgate connections connect "
                f"{server}`)",
                409,
            )
        body = SecretBody.model_validate(await read_json(request))
        connection = await self._vault().set(server, principal_key(who), body.secret)
        return JSONResponse(connection.to_json())

    async def mine(self, request: Request, who: Principal) -> Response:
        found = (
            await self._vault().connections(principal_key(who)) if self.vault is not None else []
        )
        return JSONResponse({"items": [c.to_json() for c in found]})

    async def everyone(self, request: Request, who: Principal) -> Response:
        found = await self._vault().connections() if self.vault is not None else []
        visible = [c for c in found if _tenant_of(c.principal, who)]
        return JSONResponse({"items": [c.to_json() for c in visible]})

    async def delete(self, request: Request, who: Principal) -> Response:
        server = self._server(request)
        oauth, key = self._oauth(server), principal_key(who)
        upstream = False
        if oauth is not None:
            found = await oauth.revoke(key, by=who.id)
            gone, upstream = (None, False) if found is None else found
        else:
            gone = await self._vault().revoke(server, key, by=who.id)
        if gone is None:
            raise BadRequest(f"you have no connection to {server!r}", 404)
        return JSONResponse({**gone.to_json(), "revoked": True, "revoked_upstream": upstream})

    async def connect(self, request: Request, who: Principal) -> Response:
        server = self._server(request)
        assert self.credentials is not None  # a per-caller server has its provider
        try:
            url = await self.credentials.start_connect(server, principal_key(who))
        except NoConnectFlow as exc:
            raise BadRequest(str(exc), 409) from None
        except ConnectError as exc:
            raise BadRequest(str(exc), 502) from None
        return JSONResponse({"server": server, "url": url})


def _tenant_of(principal: str, who: Principal) -> bool:
    """A connection's principal is keyed with its tenant (`principal_key`): an approver of a
    tenant sees that tenant's connections only, and one without a tenant the untenanted ones."""
    if who.tenant is None:
        return TENANT_SEPARATOR not in principal
    return principal.startswith(f"{who.tenant}{TENANT_SEPARATOR}")


def connection_routes(gateway: Gateway, callers: Guard, approvers: Guard) -> list[BaseRoute]:
    """The connection routes; ``callers`` lets agents and approvers in, ``approvers`` only
    approvers."""
    api = _Connections(gateway)
    return [
        Route("/api/connections", callers(api.mine), methods=["GET"]),
        Route("/api/connections/all", approvers(api.everyone), methods=["GET"]),
        Route("/api/connections/{server}", callers(api.put), methods=["PUT"]),
        Route("/api/connections/{server}", callers(api.delete), methods=["DELETE"]),
        Route("/api/connections/{server}/connect", callers(api.connect), methods=["POST"]),
    ]
