"""A real OAuth 2.1 / OpenID authorization server for the tests: ``oidc-provider`` from npm
(pinned), installed once per test session into a tmp folder with its own npm cache, run by
``node provider.mjs`` on 127.0.0.1 at a free port.

What it offers (see `provider.mjs`): authorization code with PKCE through its dev login and
consent pages (`browser_login` drives them), a pre-registered confidential client, dynamic
registration (RFC 7591) at ``/reg``, client credentials, refresh tokens (rotated unless told
not to), revocation, introspection, resource indicators (RFC 8707) with JWT access tokens whose
``aud`` is the resource, the RFC 8693 token-exchange grant and a test-only ``password`` grant,
both registered with ``provider.registerGrantType``; and, asked for, Client ID Metadata
Documents (its own ``clientIdMetadataDocument`` feature): an https ``client_id`` is fetched as
the client's metadata, trusting a test CA.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from npm_support import NODE, npm_package
from support import free_port

OIDC_PROVIDER = "oidc-provider@9.13.3"
SCRIPT = Path(__file__).resolve().parent / "provider.mjs"
USERS = {"alice": "alice-password-1", "bob": "bob-password-2", "carol": "carol-password-3"}
"""The provider's users and their passwords."""
CLIENT_ID, CLIENT_SECRET = "lockgate", "lockgate-client-secret-5e1b"
"""The pre-registered confidential client (``client_secret_basic`` or ``_post``)."""
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
GRANTS = ["authorization_code", "refresh_token", "client_credentials", "password", TOKEN_EXCHANGE]
SCOPES = "notes:read notes:write"
"""The scopes of every resource server (upstream) the provider knows."""

_installed: dict[int, Path] = {}


def provider_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``oidc-provider`` package folder, installed once per test session."""
    key = id(tmp_path_factory)
    if key not in _installed:
        _installed[key] = npm_package(tmp_path_factory, OIDC_PROVIDER)
    return _installed[key]


@dataclass(frozen=True)
class Provider:
    """A running provider: its issuer, its pre-registered client and its users."""

    issuer: str
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    users: Mapping[str, str] = field(default_factory=lambda: dict(USERS))
    process: anyio.abc.Process | None = field(default=None, repr=False, compare=False)

    async def stop(self) -> None:
        """Stop the provider now (it is down until the block ends): its endpoints refuse."""
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    async def discovery(self) -> dict[str, Any]:
        """Its OpenID discovery document (also RFC 8414 metadata)."""
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.get(f"{self.issuer}/.well-known/openid-configuration")
            response.raise_for_status()
            document: dict[str, Any] = response.json()
            return document

    async def token(self, **form: str) -> dict[str, Any]:
        """A token request by the pre-registered client; the provider's JSON answer (an error
        answer raises `httpx2.HTTPStatusError`)."""
        auth = (self.client_id, self.client_secret)
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(self.token_endpoint, data=form, auth=auth)
            response.raise_for_status()
            answer: dict[str, Any] = response.json()
            return answer

    async def user_token(self, user: str, resource: str, scope: str | None = None) -> str:
        """``user``'s access token (a JWT, ``aud`` = ``resource``), by the test-only password
        grant: what an identity provider gives a signed-in user's agent."""
        form = {"grant_type": "password", "username": user, "password": self.users[user]}
        form |= {"resource": resource} | ({"scope": scope} if scope else {})
        return str((await self.token(**form))["access_token"])

    async def agent_token(self, resource: str) -> str:
        """The client's own access token (client credentials, ``sub`` = the client id)."""
        answer = await self.token(grant_type="client_credentials", resource=resource)
        return str(answer["access_token"])

    async def exchange(self, subject_token: str, resource: str) -> dict[str, Any]:
        """RFC 8693: ``subject_token`` exchanged for a token whose audience is ``resource``."""
        return await self.token(
            grant_type=TOKEN_EXCHANGE,
            subject_token=subject_token,
            subject_token_type=ACCESS_TOKEN_TYPE,
            resource=resource,
        )

    async def revoke(self, token: str, hint: str = "refresh_token") -> None:
        """Revoke a refresh token (and its grant) or an opaque token at ``/token/revocation``."""
        auth = (self.client_id, self.client_secret)
        form = {"token": token, "token_type_hint": hint}
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(f"{self.token_endpoint}/revocation", data=form, auth=auth)
            response.raise_for_status()


@contextlib.asynccontextmanager
async def oidc_provider(
    tmp_path_factory: pytest.TempPathFactory,
    *,
    redirect_uris: Sequence[str] = (),
    access_token_ttl: int = 300,
    rotate_refresh_tokens: bool = True,
    exchange_audiences: Sequence[str] = (),
    exchange_refused: Sequence[str] = (),
    port: int | None = None,
    client_metadata_ca: Path | None = None,
) -> AsyncIterator[Provider]:
    """Run the provider until the block ends.

    Args:
        redirect_uris: the pre-registered client's (e.g. the gateway's ``/oauth/callback``);
            dynamically registered clients bring their own.
        access_token_ttl: seconds every access token lives (short ones exercise refresh).
        rotate_refresh_tokens: a refresh gives a new refresh token (and spends the old one).
        exchange_audiences: the resources token exchange may target; empty: any.
        exchange_refused: users whose tokens it refuses to exchange (``invalid_grant``).
        port: where to listen (a free port by default).
        client_metadata_ca: a PEM file; given, the provider supports Client ID Metadata
            Documents (advertising ``client_id_metadata_document_supported``) and fetches them
            over https trusting this CA, on 127.0.0.1 too.
    """
    port = port or free_port()
    client = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "grant_types": GRANTS,
        "redirect_uris": list(redirect_uris) or [f"http://127.0.0.1:{port}/unused-callback"],
        "scope": f"openid offline_access {SCOPES}",
    }
    settings = {
        "port": port,
        "clients": [client],
        "users": USERS,
        "resource_scopes": SCOPES,
        "access_token_ttl": access_token_ttl,
        "rotate_refresh_tokens": rotate_refresh_tokens,
        "exchange_audiences": list(exchange_audiences),
        "exchange_refused": list(exchange_refused),
        "client_metadata_ca": None if client_metadata_ca is None else str(client_metadata_ca),
    }
    package = provider_package(tmp_path_factory)
    argv = [NODE, str(SCRIPT), str(package), json.dumps(settings)]
    process = await anyio.open_process(argv, stdout=subprocess.PIPE, stderr=None)
    try:
        provider = Provider(f"http://127.0.0.1:{port}", process=process)
        await _ready(process, provider)
        yield provider
    finally:
        with anyio.CancelScope(shield=True):
            await provider.stop()
            await process.aclose()


async def _ready(process: anyio.abc.Process, provider: Provider) -> None:
    """Wait for the provider's "listening" line, then check its discovery document."""
    assert process.stdout is not None
    with anyio.fail_after(60):
        said = b""
        async for chunk in process.stdout:
            said += chunk
            if b"listening" in said:
                break
        assert b"listening" in said, f"oidc-provider exited ({process.returncode}): {said!r}"
        assert (await provider.discovery())["issuer"] == provider.issuer
