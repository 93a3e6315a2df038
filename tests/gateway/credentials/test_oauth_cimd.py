"""``oauth`` mode with a Client ID Metadata Document (``credentials.client_metadata_url``),
end to end against a real authorization server: oidc-provider with its own CIMD support (it
advertises ``client_id_metadata_document_supported`` and fetches an https ``client_id`` as the
client's metadata), the document served by the test over https on 127.0.0.1 (a CA of the
test's own, trusted by the provider's fetches), Chromium through the login and consent pages.

The gateway uses the URL as its client_id, in the spec's order: the provider also offers dynamic
registration, which is never used; the provider fetched the document, and the token the
upstream accepts was issued to that client."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import pytest
from credentials_support import AGENTS, every_log_line, vault_keys
from oauth import USERS, Provider, Upstream, browser_login, oidc_provider
from oauth_gateway import (
    ALICE,
    SERVER,
    leaks,
    oauth_config,
    oauth_server,
    provider_of,
    served,
    start_connect,
    tokens_of,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from support import MODES, free_port, mcp_http_client, serve_asgi
from tls_support import self_signed

PORT, DOCUMENT_PORT = free_port(), free_port()
CALLBACK = f"http://127.0.0.1:{PORT}/oauth/callback"
CLIENT_URL = f"https://127.0.0.1:{DOCUMENT_PORT}/oauth/lockgate-client.json"
"""The gateway's client_id: the URL of its Client ID Metadata Document."""
pytestmark = pytest.mark.timeout(300)  # Chromium, and npm on a cold cache


@dataclass
class Document:
    """The metadata document served at `CLIENT_URL`, and how often it was fetched."""

    body: dict[str, Any]
    fetched: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def document_server(
    document: Document, cert_file: Path, key_file: Path
) -> AsyncIterator[None]:
    """Serve ``document`` at `CLIENT_URL` (uvicorn, https) until the block ends."""

    async def serve(request: Request) -> JSONResponse:
        document.fetched.append(request.headers.get("accept", ""))
        return JSONResponse(document.body, headers={"Cache-Control": "max-age=60"})

    app = Starlette(routes=[Route(urlparse(CLIENT_URL).path, serve)])
    async with serve_asgi(app, DOCUMENT_PORT, tls=(cert_file, key_file)):
        yield


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("cimd-tls"))


@pytest.fixture(scope="module")
async def document(tls: tuple[Path, Path]) -> AsyncIterator[Document]:
    body = {
        "client_id": CLIENT_URL,
        "client_name": "lockgate",
        "redirect_uris": [CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    }
    served_document = Document(body)
    async with document_server(served_document, *tls):
        yield served_document


@pytest.fixture(scope="module")
async def provider(
    tmp_path_factory: pytest.TempPathFactory, tls: tuple[Path, Path], document: Document
) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, client_metadata_ca=tls[0]) as running:
        yield running


@pytest.mark.parametrize("mode", MODES)
async def test_the_gateway_connects_with_its_metadata_document_url_as_client_id(
    tmp_path: Path, provider: Provider, upstream: Upstream, document: Document, mode: str
) -> None:
    advertised = await provider.discovery()
    servers = [oauth_server(upstream.url, client_metadata_url=CLIENT_URL)]
    with vault_keys(), every_log_line() as logs, anyio.fail_after(240):
        config = oauth_config(tmp_path, servers, port=PORT)
        async with served(config, PORT) as (gateway, base):
            url = await start_connect(base, ALICE)
            landed = await browser_login(url, "alice", USERS["alice"])
            assert landed.startswith(f"{base}/oauth/callback?"), landed
            async with mcp_http_client(f"{base}/mcp", mode, AGENTS[ALICE]) as alice:
                result = await alice.call_tool(f"{SERVER}__whoami", {})
            held = await provider_of(gateway).grants.held(ALICE)
            tokens = await tokens_of(gateway, ALICE)
    assert advertised["client_id_metadata_document_supported"] is True
    assert advertised.get("registration_endpoint")  # offered, and passed over for the document
    assert parse_qs(urlparse(url).query)["client_id"] == [CLIENT_URL]
    assert document.fetched  # the provider resolved the client from the document
    assert held is not None
    assert held.grant.client.client_id == CLIENT_URL
    assert held.grant.client.client_secret is None
    assert not result.is_error, result
    whoami = result.structured_content
    assert whoami is not None
    assert (whoami["sub"], whoami["client_id"]) == ("alice", CLIENT_URL)
    assert whoami["aud"] == upstream.url
    assert not leaks({*tokens, *upstream.seen.tokens}, config, logs.lines, [landed])
