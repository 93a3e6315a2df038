"""OAuth 2.0 Protected Resource Metadata (RFC 9728): the documents at both well-known paths,
and the ``WWW-Authenticate`` challenges on ``/mcp`` and ``/api/*`` that point at them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from approvals_e2e_support import api_client
from auth_support import (
    HMAC_ISSUER,
    JWK_ISSUER,
    STATIC_ISSUER,
    Idp,
    idp_issuer,
    rsa_key,
    static_issuers,
    suite_config,
)
from support import serve_asgi

from gateway.auth.oauth_metadata import WELL_KNOWN, ResourceMetadata
from gateway.config.jwt import JwtIssuerConfig
from gateway.gateway import Gateway
from gateway.http.app import build_app

PUBLIC = "https://lockgate.example.com"


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, str]]:
    """A gateway whose public URL is configured; yields its local base URL and its issuer."""
    idp = Idp(keys=[rsa_key("rsa-1")])
    async with idp.serve() as issuer:
        issuers = [idp_issuer(issuer), *static_issuers()]
        directory = tmp_path_factory.mktemp("resource-metadata")
        config = suite_config(directory, issuers, public_url=PUBLIC)
        async with serve_asgi(build_app(Gateway.from_config(config))) as base:
            yield base, issuer


async def test_the_mcp_metadata_names_only_the_agents_issuers_and_scope(
    served: tuple[str, str],
) -> None:
    base, issuer = served
    async with api_client(base, None) as http:
        response = await http.get(WELL_KNOWN + "/mcp")

    assert response.status_code == 200
    # An MCP client asks for the scopes listed here: never one that approves.
    assert response.json() == {
        "resource": PUBLIC + "/mcp",
        "authorization_servers": [issuer, STATIC_ISSUER],
        "scopes_supported": ["lockgate:call"],
        "bearer_methods_supported": ["header"],
        "resource_name": "lockgate MCP",
    }


async def test_the_api_metadata_names_the_issuers_and_scopes_of_everyone_else(
    served: tuple[str, str],
) -> None:
    base, issuer = served
    async with api_client(base, None) as http:
        response = await http.get(WELL_KNOWN)

    assert response.status_code == 200
    assert response.json() == {
        "resource": PUBLIC,
        "authorization_servers": [issuer, JWK_ISSUER, HMAC_ISSUER],
        "scopes_supported": ["lockgate:approve", "lockgate:events", "lockgate:work"],
        "bearer_methods_supported": ["header"],
        "resource_name": "lockgate",
    }


@pytest.mark.parametrize(
    ("path", "suffix", "scope"),
    [("/mcp", "/mcp", "lockgate:call"), ("/api/approvals", "", "lockgate:approve")],
)
async def test_a_request_without_a_token_is_pointed_at_the_metadata_and_scope(
    served: tuple[str, str], path: str, suffix: str, scope: str
) -> None:
    base, _ = served
    async with api_client(base, None) as http:
        response = await http.post(path, json={}) if path == "/mcp" else await http.get(path)

    assert response.status_code == 401
    # No error code without credentials (RFC 6750 section 3.1): where to get them, and what.
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="lockgate", scope="{scope}", '
        f'resource_metadata="{PUBLIC}{WELL_KNOWN}{suffix}"'
    )


def test_without_jwt_issuers_there_is_no_metadata_and_no_pointer() -> None:
    metadata = ResourceMetadata(None, [])

    assert metadata.routes() == []
    challenge = metadata.challenge({"type": "http"}, "/mcp", {"error": "invalid_token"})
    assert challenge == 'Bearer realm="lockgate", error="invalid_token"'


def test_without_an_agents_issuer_mcp_has_no_metadata() -> None:
    approvers = JwtIssuerConfig.model_validate(
        {"issuer": "https://idp.test", "audience": "x", "jwks_url": "https://idp.test/certs"}
        | {"as": ["approver"]}
    )
    metadata = ResourceMetadata(None, [approvers])

    assert [route.path for route in metadata.routes()] == [WELL_KNOWN]
    assert "resource_metadata" not in metadata.challenge({"type": "http"}, "/mcp", {})
