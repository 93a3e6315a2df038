"""``oauth`` mode with the gateway's own Client ID Metadata Document, end to end against a real
authorization server: oidc-provider with its CIMD support on (it advertises
``client_id_metadata_document_supported`` and fetches an https ``client_id`` as the client's
metadata, trusting the test's CA), the gateway served over https on 127.0.0.1 with that
certificate (its ``auth.public_url``), Chromium through the login and consent pages.

With no ``client`` and no ``client_metadata_url`` the gateway's client_id is the URL of the
document it serves itself (``/oauth/client-metadata.json``), which the provider fetches from the
gateway's listener; an http ``public_url`` or ``client_metadata_url: none`` registers dynamically
as before, and a configured ``client_metadata_url`` wins."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import pytest
import yaml
from credentials_support import AGENTS, every_log_line, vault_keys
from mcp import Client
from mcp.client.auth.utils import is_valid_client_metadata_url
from mcp.client.streamable_http import streamable_http_client
from oauth import USERS, Provider, Upstream, browser_login, chromium, oidc_provider
from oauth_gateway import ALICE, SERVER, leaks, oauth_config, oauth_server, provider_of, tokens_of
from pydantic import ValidationError
from support import MODES, free_port, serve_asgi
from tls_support import self_signed, trusting

from gateway.config.credentials import CredentialsConfig
from gateway.gateway import Gateway
from gateway.http.app import build_app

PORT = free_port()
BASE = f"https://127.0.0.1:{PORT}"
"""The gateway over https: its ``auth.public_url``."""
OWN = f"{BASE}/oauth/client-metadata.json"
"""The gateway's own document: its client_id."""
pytestmark = pytest.mark.timeout(300)  # Chromium, and npm on a cold cache


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("own-cimd-tls"))


@pytest.fixture(scope="module")
async def provider(
    tmp_path_factory: pytest.TempPathFactory, tls: tuple[Path, Path]
) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, client_metadata_ca=tls[0]) as running:
        yield running


def _config(directory: Path, upstream: Upstream, public_url: str, **credentials: Any) -> Path:
    """The suite's gateway config with ``public_url`` and ``credentials`` for ``notes``."""
    port = urlparse(public_url).port
    assert port is not None
    path = oauth_config(directory, [oauth_server(upstream.url, **credentials)], port=port)
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["auth"]["public_url"] = public_url
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def _served(
    config: Path, tls: tuple[Path, Path] | None
) -> AsyncIterator[tuple[Gateway, str]]:
    """The gateway of ``config`` on the port of its ``public_url``, over https with ``tls``."""
    gateway = Gateway.from_config(config)
    public_url = gateway.config.auth.public_url
    assert public_url is not None
    async with serve_asgi(build_app(gateway), urlparse(public_url).port, tls=tls) as base:
        yield gateway, base


def _verify(tls: tuple[Path, Path] | None) -> Any:
    return True if tls is None else trusting(tls[0])


@contextlib.asynccontextmanager
async def _rest(
    base: str, principal: str | None, tls: tuple[Path, Path] | None
) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client on the gateway (holding ``principal``'s token unless None)."""
    headers = {} if principal is None else {"Authorization": f"Bearer {AGENTS[principal]}"}
    async with httpx2.AsyncClient(
        base_url=base, headers=headers, timeout=60, verify=_verify(tls)
    ) as client:
        yield client


@contextlib.asynccontextmanager
async def _mcp(
    base: str, mode: str, principal: str, tls: tuple[Path, Path]
) -> AsyncIterator[Client]:
    """``principal``'s MCP client on the gateway's ``/mcp`` over https."""
    headers = {"Authorization": f"Bearer {AGENTS[principal]}"}
    timeout = httpx2.Timeout(30, read=60)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, verify=_verify(tls)) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            yield client


async def _start_connect(base: str, tls: tuple[Path, Path] | None) -> str:
    """Alice's authorization URL from ``POST .../connect``."""
    async with _rest(base, ALICE, tls) as api:
        answer = await api.post(f"/api/connections/{SERVER}/connect")
    assert answer.status_code == 200, answer.text
    url: str = answer.json()["url"]
    return url


async def _sign_in(url: str) -> str:
    """Alice signs in and consents in Chromium (which trusts no test CA: certificate errors
    are ignored for the gateway's callback page); the URL the provider sent her back to."""
    async with chromium() as browser:
        context = await browser.new_context(ignore_https_errors=True)
        try:
            page = await context.new_page()
            await page.goto(url)
            return await browser_login(page, "alice", USERS["alice"])
        finally:
            await context.close()


def _client_id(url: str) -> str:
    return parse_qs(urlparse(url).query)["client_id"][0]


@pytest.mark.parametrize("mode", MODES)
async def test_the_gateway_connects_with_its_own_metadata_document_as_client_id(
    tmp_path: Path, provider: Provider, upstream: Upstream, tls: tuple[Path, Path], mode: str
) -> None:
    advertised = await provider.discovery()
    with vault_keys(), every_log_line() as logs, anyio.fail_after(240):
        config = _config(tmp_path, upstream, BASE)
        async with _served(config, tls) as (gateway, base):
            url = await _start_connect(base, tls)
            landed = await _sign_in(url)
            assert landed.startswith(f"{BASE}/oauth/callback?"), landed
            async with _mcp(base, mode, ALICE, tls) as alice:
                result = await alice.call_tool(f"{SERVER}__whoami", {})
            held = await provider_of(gateway).grants.held(ALICE)
            tokens = await tokens_of(gateway, ALICE)
    assert advertised["client_id_metadata_document_supported"] is True
    assert advertised.get("registration_endpoint")  # offered, and passed over for the document
    assert _client_id(url) == OWN
    assert held is not None
    assert held.grant.client.client_id == OWN
    assert held.grant.client.client_secret is None
    assert not result.is_error, result
    whoami = result.structured_content
    assert whoami is not None
    assert (whoami["sub"], whoami["client_id"]) == ("alice", OWN)  # resolved from the document
    assert whoami["aud"] == upstream.url
    assert not leaks({*tokens, *upstream.seen.tokens}, config, logs.lines, [landed])


async def test_the_document_names_the_gateway_as_a_public_client_returning_to_its_callback(
    tmp_path: Path, upstream: Upstream, tls: tuple[Path, Path]
) -> None:
    config = _config(tmp_path, upstream, BASE, client_name="lockgate (acme)")
    with vault_keys(), anyio.fail_after(120):
        async with _served(config, tls) as (_, base), _rest(base, None, tls) as anyone:
            answer = await anyone.get("/oauth/client-metadata.json")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["cache-control"] == "public, max-age=3600"
    document = answer.json()
    assert document["client_id"] == OWN == str(answer.url)  # the URL it is served at
    assert is_valid_client_metadata_url(document["client_id"])
    assert document["client_name"] == "lockgate (acme)"
    assert document["client_uri"] == f"{BASE}/connections"
    assert document["redirect_uris"] == [f"{BASE}/oauth/callback"]
    assert document["grant_types"] == ["authorization_code", "refresh_token"]
    assert document["response_types"] == ["code"]
    assert document["token_endpoint_auth_method"] == "none"
    assert document["application_type"] == "web"
    assert set(document) == {
        "client_id",
        "client_name",
        "client_uri",
        "redirect_uris",
        "grant_types",
        "response_types",
        "token_endpoint_auth_method",
        "application_type",
    }  # no secret (the draft forbids one), no scope (each connect asks for its own)


@pytest.mark.parametrize(
    ("scheme", "setting"),
    [
        pytest.param("http", None, id="an http public_url"),
        pytest.param("https", "none", id="client_metadata_url none"),
    ],
)
async def test_without_the_document_the_gateway_registers_dynamically(
    tmp_path: Path,
    upstream: Upstream,
    tls: tuple[Path, Path],
    scheme: str,
    setting: str | None,
) -> None:
    served_tls = tls if scheme == "https" else None
    public_url = f"{scheme}://127.0.0.1:{free_port()}"
    credentials = {} if setting is None else {"client_metadata_url": setting}
    with vault_keys(), anyio.fail_after(240):
        config = _config(tmp_path, upstream, public_url, **credentials)
        async with _served(config, served_tls) as (gateway, base):
            url = await _start_connect(base, served_tls)
            landed = await _sign_in(url)
            assert landed.startswith(f"{public_url}/oauth/callback?"), landed
            held = await provider_of(gateway).grants.held(ALICE)
            async with _rest(base, None, served_tls) as anyone:
                document = await anyone.get("/oauth/client-metadata.json")
    client_id = _client_id(url)
    assert not client_id.startswith(("http://", "https://"))  # registered (RFC 7591)
    assert held is not None
    assert held.grant.client.client_id == client_id
    assert document.status_code == 404


async def test_a_configured_client_metadata_url_wins_over_the_gateways_own(
    tmp_path: Path, upstream: Upstream, tls: tuple[Path, Path]
) -> None:
    elsewhere = f"https://127.0.0.1:{free_port()}/clients/lockgate.json"
    config = _config(tmp_path, upstream, BASE, client_metadata_url=elsewhere)
    with vault_keys(), anyio.fail_after(120):
        async with _served(config, tls) as (_, base):
            url = await _start_connect(base, tls)
            async with _rest(base, None, tls) as anyone:
                document = await anyone.get("/oauth/client-metadata.json")
    assert _client_id(url) == elsewhere
    assert document.status_code == 404  # the gateway serves no document nobody uses


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("None", id="None"),
        pytest.param("http://lockgate.example.com/client.json", id="http"),
        pytest.param("https://lockgate.example.com", id="no path"),
        pytest.param("off", id="off"),
    ],
)
def test_client_metadata_url_is_an_https_url_with_a_path_or_none(value: str) -> None:
    assert CredentialsConfig(mode="oauth", client_metadata_url="none").client_metadata_url == (
        "none"
    )
    with pytest.raises(ValidationError, match="client_metadata_url"):
        CredentialsConfig(mode="oauth", client_metadata_url=value)
