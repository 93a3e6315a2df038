"""The OAuth harness works end to end (real parts only): oidc-provider from npm issues tokens by
authorization code with PKCE through its login and consent pages in Chromium, rotates refresh
tokens, registers clients dynamically and exchanges tokens (RFC 8693); the protected upstream
refuses a call without a token with a ``WWW-Authenticate`` naming its resource metadata and
answers ``whoami`` with the token's subject, each user seeing only their own notes, in both eras."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import httpx2
import jwt
import pytest
from mcp import Client
from oauth import (
    NOTES,
    USERS,
    Provider,
    Upstream,
    browser_login,
    chromium,
    new_page,
    oidc_provider,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from support import MODES, free_port, mcp_http_client, serve_asgi

CALLBACK = f"http://127.0.0.1:{free_port()}/callback"


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, redirect_uris=[CALLBACK]) as running:
        yield running


def _claims(token: str) -> dict[str, Any]:
    claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return claims


def _authorization_url(provider: Provider, resource: str, verifier: str, state: str) -> str:
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": CALLBACK,
        "scope": "notes:read",
        "resource": resource,
        "state": state,
        "code_challenge": challenge.decode().rstrip("="),
        "code_challenge_method": "S256",
    }
    return f"{provider.issuer}/auth?{urlencode(query)}"


async def _code_by_browser(provider: Provider, resource: str, verifier: str) -> str:
    """Alice signs in and consents in Chromium; the code the provider redirected with (to a
    real callback: a client's redirect URI served on 127.0.0.1)."""
    state = secrets.token_urlsafe(16)

    async def callback(request: Request) -> Response:
        return PlainTextResponse("connected")

    client = Starlette(routes=[Route("/callback", callback)])
    port = int(urlparse(CALLBACK).port or 0)
    async with serve_asgi(client, port), chromium() as browser, new_page(browser) as page:
        url = _authorization_url(provider, resource, verifier, state)
        await page.goto(url)
        landed = await browser_login(page, "alice", USERS["alice"])
    query = parse_qs(urlparse(landed).query)
    assert landed.startswith(CALLBACK), landed
    assert query["state"] == [state]
    return str(query["code"][0])


async def test_the_browser_flow_gives_a_resource_bound_token_and_rotating_refresh_tokens(
    provider: Provider, upstream: Upstream
) -> None:
    verifier = secrets.token_urlsafe(48)
    code = await _code_by_browser(provider, upstream.url, verifier)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK}
    answer = await provider.token(**form, code_verifier=verifier, resource=upstream.url)
    claims = _claims(answer["access_token"])
    assert (claims["sub"], claims["aud"], claims["iss"]) == ("alice", upstream.url, provider.issuer)
    assert claims["scope"] == "notes:read"

    refreshed = await provider.token(
        grant_type="refresh_token", refresh_token=answer["refresh_token"]
    )
    assert refreshed["refresh_token"] != answer["refresh_token"]  # rotated
    assert _claims(refreshed["access_token"])["sub"] == "alice"
    with pytest.raises(httpx2.HTTPStatusError) as spent:  # the old one is spent
        await provider.token(grant_type="refresh_token", refresh_token=answer["refresh_token"])
    assert spent.value.response.json()["error"] == "invalid_grant"

    await provider.revoke(refreshed["refresh_token"])
    with pytest.raises(httpx2.HTTPStatusError) as revoked:
        await provider.token(grant_type="refresh_token", refresh_token=refreshed["refresh_token"])
    assert revoked.value.response.json()["error"] == "invalid_grant"


async def test_a_wrong_password_is_refused_on_the_login_page(provider: Provider) -> None:
    url = _authorization_url(provider, "https://any.test/mcp", secrets.token_urlsafe(48), "s")
    with pytest.raises(AssertionError, match="refused the login of 'bob'"):
        await browser_login(url, "bob", "not-bobs-password")


async def test_the_upstream_refuses_a_call_without_a_token_naming_its_resource_metadata(
    provider: Provider, upstream: Upstream
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as http:
        refused = await http.post(upstream.url, json=body, headers=headers)
        wrong_audience = await provider.user_token("alice", "https://elsewhere.test/mcp")
        foreign = await http.post(
            upstream.url, json=body, headers=headers | {"Authorization": f"Bearer {wrong_audience}"}
        )
        metadata = (await http.get(upstream.metadata_url)).json()
    assert refused.status_code == 401
    assert foreign.status_code == 401
    assert f'resource_metadata="{upstream.metadata_url}"' in refused.headers["www-authenticate"]
    assert metadata["resource"] == upstream.url
    assert metadata["authorization_servers"] == [provider.issuer]


@pytest.mark.parametrize("mode", MODES)
async def test_whoami_answers_each_callers_subject_and_notes_are_their_own(
    provider: Provider, upstream: Upstream, mode: str
) -> None:
    for user in ("alice", "bob"):
        token = await provider.user_token(user, upstream.url)
        async with mcp_http_client(upstream.url, mode, token) as client:
            me = (await client.call_tool("whoami", {})).structured_content
            notes = await _notes(client)
        assert me is not None
        assert (me["sub"], me["aud"]) == (user, upstream.url)
        assert notes == NOTES[user]


async def _notes(client: Client) -> list[str]:
    result = await client.call_tool("my_notes", {})
    assert not result.is_error, result
    assert result.structured_content is not None
    return list(result.structured_content["result"])


async def test_token_exchange_keeps_the_subject_and_names_the_upstream_as_audience(
    provider: Provider, upstream: Upstream
) -> None:
    caller = await provider.user_token("bob", "https://lockgate.test/mcp")
    exchanged = await provider.exchange(caller, upstream.url)
    claims = _claims(exchanged["access_token"])
    assert (claims["sub"], claims["aud"]) == ("bob", upstream.url)
    assert claims["act"] == {"sub": provider.client_id}
    with pytest.raises(httpx2.HTTPStatusError) as refused:
        await provider.exchange(caller[:-4] + "AAAA", upstream.url)
    assert refused.value.response.json()["error"] == "invalid_grant"


async def test_dynamic_registration_gives_a_client_for_a_loopback_redirect(
    provider: Provider,
) -> None:
    document = await provider.discovery()
    body: dict[str, Any] = {"redirect_uris": [CALLBACK], "response_types": ["code"]}
    body |= {"grant_types": ["authorization_code", "refresh_token"]}
    body |= {"token_endpoint_auth_method": "none"}
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.post(document["registration_endpoint"], json=body)
    assert answer.status_code == 201, answer.text
    assert answer.json()["redirect_uris"] == [CALLBACK]
