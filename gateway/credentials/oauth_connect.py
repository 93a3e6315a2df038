"""`Connects`: the authorization code flow split in two, as a server needs it.

The MCP SDK's `OAuthClientProvider` runs the redirect and the callback inside one coroutine (a
desktop client opens the browser and listens on a loopback port). The gateway's user comes back
later, to ``/oauth/callback``, possibly long after the call that needed the connection ended;
so `start` discovers, registers, keeps the PKCE verifier and the state (single use, bound to
the server and principal, expiring after ``credentials.connect_timeout`` seconds) and gives the
authorization URL; `finish` takes the state back, exchanges the code and seals the grant in the
vault, whose ``credential.connected`` event and listeners tell the rest of the gateway.

The started flows are sealed in the storage backend (`ConnectFlows`): with PostgreSQL the
browser may come back to any replica, which finishes the flow with the client the starting
replica registered.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Final

import httpx2
from mcp.client.auth import OAuthFlowError, PKCEParameters
from mcp.client.auth.utils import get_client_metadata_scopes, union_scopes
from mcp.client.auth.utils import validate_authorization_response_iss as check_iss
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from gateway.config.credentials import CredentialsConfig
from gateway.credentials.errors import ConnectError
from gateway.credentials.flow_store import FlowStore
from gateway.credentials.oauth_client import (
    TokenRefused,
    authorization_url,
    exchange_code,
    register,
)
from gateway.credentials.oauth_discovery import Discovered, discover
from gateway.credentials.oauth_flows import ConnectFlows, Flow
from gateway.credentials.oauth_grant import Grant
from gateway.credentials.oauth_tokens import Grants, http_client
from gateway.vault import Connection

__all__ = ["CALLBACK_PATH", "Connects", "Finished"]

CALLBACK_PATH: Final = "/oauth/callback"
"""Where the authorization server sends the user's browser back (on the gateway's URL)."""


@dataclass(frozen=True, slots=True)
class Finished:
    """A completed connect: the connection, the held call it was for, where to go next."""

    connection: Connection
    call_ref: str | None
    return_to: str | None


class Connects:
    """The started connects of one ``oauth`` server.

    Args:
        server: The upstream's name.
        url: The upstream's MCP URL.
        settings: Its ``credentials``.
        grants: Its grants in the vault.
        redirect_uri: The gateway's ``/oauth/callback`` URL.
        flows: Where started flows are kept (sealed with the vault's keys).
    """

    def __init__(
        self,
        server: str,
        url: str,
        settings: CredentialsConfig,
        grants: Grants,
        redirect_uri: str,
        *,
        flows: FlowStore,
    ) -> None:
        self.server, self.url, self.settings = server, url, settings
        self.grants, self.redirect_uri = grants, redirect_uri
        ttl = settings.connect_timeout
        self.flows = ConnectFlows(server, flows, grants.vault.keyring, ttl=ttl)
        self._client: tuple[str, OAuthClientInformationFull] | None = None

    async def owns(self, state: str) -> bool:
        """``state`` was started for this server, on any replica, and not finished yet."""
        return await self.flows.owns(state)

    async def _scope(self, principal: str, found: Discovered) -> str | None:
        """The scope asked: configured, else as the spec picks it; after an
        ``insufficient_scope`` (step-up), with the scope it named or, as the SDK's resource
        server names none, the scopes the resource lists now."""
        if self.settings.scopes:
            scope: str | None = " ".join(self.settings.scopes)
        else:  # as the SDK picks it: the challenge's, the resource's, the server's
            grant_types = ["authorization_code", "refresh_token"]
            scope = get_client_metadata_scopes(
                found.challenged_scope, found.protected, found.server, grant_types
            )
        held = await self.grants.held(principal)
        if held is not None and held.grant.stepped_up:
            wanted = held.grant.wanted_scope
            scope = union_scopes(
                scope, wanted or get_client_metadata_scopes(found.challenged_scope, found.protected)
            )
        return scope

    async def _registered(
        self, http: httpx2.AsyncClient, found: Discovered, scope: str | None
    ) -> OAuthClientInformationFull:
        """The gateway's client at ``found``'s authorization server (registered once per
        issuer in this process)."""
        issuer = str(found.server.issuer)
        if self._client is not None and self._client[0] == issuer:
            return self._client[1]
        client = await register(http, found, self.settings, self.redirect_uri, scope)
        self._client = (issuer, client)
        return client

    async def start(
        self, principal: str, *, call_ref: str | None = None, return_to: str | None = None
    ) -> str:
        """The authorization URL at which ``principal`` connects.

        Raises:
            ConnectError: the upstream or its authorization server cannot be reached, or its
                metadata or registration is unusable.
        """
        try:
            async with http_client() as http:
                found = await discover(http, self.url)
                scope = await self._scope(principal, found)
                client = await self._registered(http, found, scope)
        except httpx2.HTTPError as exc:
            raise ConnectError(self.server, f"unreachable ({type(exc).__name__})") from None
        except OAuthFlowError as exc:
            raise ConnectError(self.server, str(exc)) from None
        state, pkce = secrets.token_urlsafe(32), PKCEParameters.generate()
        flow = Flow(principal, found, client, pkce.code_verifier, scope, call_ref, return_to)
        await self.flows.keep(state, flow)
        return authorization_url(
            found, client, redirect_uri=self.redirect_uri, scope=scope, state=state, pkce=pkce
        )

    async def finish(
        self, state: str, *, code: str | None, iss: str | None, error: str | None
    ) -> Finished:
        """Complete the connect ``state`` started (once: the state is spent either way).

        Raises:
            ConnectError: the state is unknown or expired, the user or server refused, the
                issuer does not match, or the code was refused.
        """
        pending = await self.flows.take(state)
        if error is not None or not code:
            raise ConnectError(self.server, f"the authorization server answered {error!r}")
        try:
            check_iss(iss, pending.found.server)
            async with http_client() as http:
                token = await exchange_code(
                    http,
                    pending.found,
                    pending.client,
                    code=code,
                    verifier=pending.verifier,
                    redirect_uri=self.redirect_uri,
                )
        except (OAuthFlowError, TokenRefused) as exc:
            raise ConnectError(self.server, str(exc)) from None
        except httpx2.HTTPError as exc:
            raise ConnectError(self.server, f"unreachable ({type(exc).__name__})") from None
        connection = await self._keep(
            pending, token.model_copy(update={"scope": token.scope or pending.scope})
        )
        return Finished(connection, pending.call_ref, pending.return_to)

    async def _keep(self, pending: Flow, token: OAuthToken) -> Connection:
        server = pending.found.server
        revocation = server.revocation_endpoint
        grant = Grant.issued(
            token,
            client=pending.client,
            issuer=str(server.issuer),
            token_endpoint=str(server.token_endpoint),
            revocation_endpoint=None if revocation is None else str(revocation),
            resource=pending.found.resource,
        )
        details = {
            **grant.public(),
            **({} if pending.call_ref is None else {"call_ref": pending.call_ref}),
        }
        return await self.grants.vault.set(
            self.server, pending.principal, grant.dump(), mode="oauth", details=details
        )
