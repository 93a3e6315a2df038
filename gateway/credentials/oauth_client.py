"""The OAuth client's requests, built with the MCP SDK's pieces: registration in the spec's
order (a pre-registered client from config, a Client ID Metadata Document where the authorization
server supports one, else dynamic registration, RFC 7591), the authorization URL (PKCE S256, the
``resource`` indicator of RFC 8707), and the token endpoint's grants (authorization code,
refresh) with the client authentication the SDK applies (`OAuthContext.prepare_token_auth`);
revocation (RFC 7009) is ours: the SDK has none.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlencode, urlparse

import httpx2
from mcp.client.auth import OAuthRegistrationError, OAuthTokenError, PKCEParameters
from mcp.client.auth.oauth2 import OAuthContext, check_registration_usable
from mcp.client.auth.utils import (
    create_client_info_from_metadata_url,
    create_client_registration_request,
    handle_registration_response,
    handle_token_response_scopes,
    should_use_client_metadata_url,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from gateway.config.credentials import CIMD_OFF, CredentialsConfig
from gateway.credentials.oauth_discovery import Discovered
from gateway.credentials.oauth_grant import Grant

__all__ = [
    "TokenRefused",
    "authorization_url",
    "exchange_code",
    "refresh",
    "register",
    "revoke",
]

FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}


class TokenRefused(OAuthTokenError):
    """The token endpoint refused a grant (``error``: its OAuth error code, e.g.
    ``invalid_grant``; never a token)."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(f"the token endpoint answered {status} {error}")
        self.status, self.error = status, error


def client_metadata(
    settings: CredentialsConfig, redirect_uri: str, scope: str | None
) -> OAuthClientMetadata:
    """What the gateway registers as (dynamic registration): a native app on an http loopback
    redirect (RFC 8252), else a web app (an https loopback one is not native)."""
    parsed = urlparse(redirect_uri)
    native = parsed.scheme == "http" and parsed.hostname in ("127.0.0.1", "::1", "localhost")
    return OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        client_name=settings.client_name,
        scope=scope,
        token_endpoint_auth_method="client_secret_basic",
        application_type="native" if native else "web",
    )


def _configured(settings: CredentialsConfig, redirect_uri: str) -> OAuthClientInformationFull:
    client = settings.client
    assert client is not None
    secret = None if client.secret is None else os.environ.get(client.secret.removeprefix("env:"))
    method = client.auth_method or ("client_secret_basic" if secret else "none")
    return OAuthClientInformationFull(
        client_id=client.id,
        client_secret=secret,
        token_endpoint_auth_method=method,
        redirect_uris=[AnyUrl(redirect_uri)],
    )


async def register(
    http: httpx2.AsyncClient,
    found: Discovered,
    settings: CredentialsConfig,
    redirect_uri: str,
    scope: str | None,
) -> OAuthClientInformationFull:
    """The client the gateway is at ``found``'s authorization server (``settings`` as
    `gateway.credentials.client_document.resolved` gives them: with the gateway's own document).

    Raises:
        OAuthRegistrationError: dynamic registration was refused or gave an unusable client.
    """
    if settings.client is not None:
        return _configured(settings, redirect_uri)
    document = None if settings.client_metadata_url == CIMD_OFF else settings.client_metadata_url
    if document is not None and should_use_client_metadata_url(found.server, document):
        return create_client_info_from_metadata_url(document, [AnyUrl(redirect_uri)])
    if found.server.registration_endpoint is None:
        raise OAuthRegistrationError(
            "it has no registration endpoint: configure credentials.client (a pre-registered "
            "client) or credentials.client_metadata_url"
        )
    metadata = client_metadata(settings, redirect_uri, scope)
    request = create_client_registration_request(found.server, metadata, "")
    registered = await handle_registration_response(await http.send(request))
    check_registration_usable(registered)
    return registered


def authorization_url(
    found: Discovered,
    client: OAuthClientInformationFull,
    *,
    redirect_uri: str,
    scope: str | None,
    state: str,
    pkce: PKCEParameters,
) -> str:
    """Where the user's browser goes to grant the gateway access (as the SDK's provider
    builds it: PKCE S256, the resource indicator, ``prompt=consent`` with
    ``offline_access``)."""
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": found.resource,
    }
    if scope:
        params["scope"] = scope
        if "offline_access" in scope.split():
            params["prompt"] = "consent"
    return f"{found.server.authorization_endpoint}?{urlencode(params)}"


def _authenticated(
    client: OAuthClientInformationFull, data: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``data`` and headers with ``client``'s authentication, applied by the SDK's own code."""
    context = OAuthContext(
        server_url="",
        client_metadata=OAuthClientMetadata(redirect_uris=None),
        storage=None,  # type: ignore[arg-type]  # only its token auth is used
        redirect_handler=None,
        callback_handler=None,
        client_info=client,
    )
    return context.prepare_token_auth({**data, "client_id": client.client_id}, dict(FORM))


async def _token(
    http: httpx2.AsyncClient, endpoint: str, client: OAuthClientInformationFull, data: Any
) -> OAuthToken:
    body, headers = _authenticated(client, data)
    response = await http.post(endpoint, data=body, headers=headers)
    if response.status_code not in (200, 201):
        try:
            error = str(response.json().get("error", "error"))
        except ValueError:
            error = "error"
        raise TokenRefused(response.status_code, error[:80])
    return await handle_token_response_scopes(response)


async def exchange_code(
    http: httpx2.AsyncClient,
    found: Discovered,
    client: OAuthClientInformationFull,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
) -> OAuthToken:
    """The tokens for an authorization ``code``.

    Raises:
        TokenRefused: the token endpoint refused the code.
    """
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": found.resource,
    }
    return await _token(http, str(found.server.token_endpoint), client, data)


async def refresh(http: httpx2.AsyncClient, grant: Grant) -> OAuthToken:
    """New tokens for ``grant``'s refresh token.

    Raises:
        TokenRefused: refused (``invalid_grant``: the refresh token was revoked or used).
    """
    if grant.token.refresh_token is None:
        raise TokenRefused(400, "no_refresh_token")
    data = {"grant_type": "refresh_token", "refresh_token": grant.token.refresh_token}
    if grant.resource is not None:
        data["resource"] = grant.resource
    return await _token(http, grant.token_endpoint, grant.client, data)


async def revoke(http: httpx2.AsyncClient, grant: Grant) -> bool:
    """Revoke ``grant`` at the authorization server's revocation endpoint (RFC 7009): its
    refresh token, which ends the grant (a server may refuse to revoke a JWT access token,
    which then lives out its short life); False when it has no endpoint or no refresh token.

    Raises:
        httpx2.HTTPError: the server could not be reached or refused.
    """
    token = grant.token.refresh_token
    if grant.revocation_endpoint is None or token is None:
        return False
    body, headers = _authenticated(
        grant.client, {"token": token, "token_type_hint": "refresh_token"}
    )
    response = await http.post(grant.revocation_endpoint, data=body, headers=headers)
    response.raise_for_status()
    return True
