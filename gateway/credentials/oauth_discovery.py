"""`discover`: what an OAuth-protected upstream says about its authorization, found the MCP
authorization spec's way with the MCP SDK's own helpers (`mcp.client.auth.utils`).

1. An unauthenticated request to the server: its 401 names the protected resource metadata
   (RFC 9728, ``WWW-Authenticate: Bearer resource_metadata=...``) and may name a scope.
2. The protected resource metadata, from that URL or the well-known ones; its ``resource`` must
   be the server's (RFC 8707); its first authorization server is used.
3. The authorization server's metadata (RFC 8414, then OpenID discovery), whose ``issuer`` must
   be the one the resource named.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx2
from mcp.client.auth import OAuthFlowError
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    validate_metadata_issuer,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

__all__ = ["Discovered", "discover"]

PROBE = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
"""The unauthenticated request whose 401 names the resource metadata."""


@dataclass(frozen=True, slots=True)
class Discovered:
    """A protected upstream's authorization metadata.

    Attributes:
        resource: The resource indicator its tokens are asked for (RFC 8707).
        protected: Its protected resource metadata (None: a legacy server without any).
        server: Its authorization server's metadata.
        challenged_scope: The scope its 401 asked for, if any.
    """

    resource: str
    protected: ProtectedResourceMetadata | None
    server: OAuthMetadata
    challenged_scope: str | None


async def _challenge(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    headers = {"Accept": "application/json, text/event-stream"}
    return await http.post(url, json=PROBE, headers=headers)


async def _protected(
    http: httpx2.AsyncClient, url: str, named: str | None
) -> ProtectedResourceMetadata | None:
    for candidate in build_protected_resource_metadata_discovery_urls(named, url):
        found = await handle_protected_resource_response(
            await http.send(create_oauth_metadata_request(candidate))
        )
        if found is not None:
            return found
    return None


async def _authorization_server(
    http: httpx2.AsyncClient, issuer: str | None, url: str
) -> OAuthMetadata:
    for candidate in build_oauth_authorization_server_metadata_discovery_urls(issuer, url):
        ok, found = await handle_auth_metadata_response(
            await http.send(create_oauth_metadata_request(candidate))
        )
        if not ok:
            break
        if found is not None:
            if issuer is not None:
                validate_metadata_issuer(found, issuer)
            return found
    raise OAuthFlowError(f"no authorization server metadata found for {issuer or url}")


async def discover(http: httpx2.AsyncClient, url: str) -> Discovered:
    """The authorization metadata of the MCP server at ``url``.

    Raises:
        OAuthFlowError: the metadata is missing, or names another resource or issuer.
        httpx2.HTTPError: a server cannot be reached.
    """
    challenge = await _challenge(http, url)
    named = extract_resource_metadata_from_www_auth(challenge)
    protected = await _protected(http, url, named)
    resource = resource_url_from_server_url(url)
    issuer: str | None = None
    if protected is not None:
        advertised = str(protected.resource)
        if not check_resource_allowed(requested_resource=resource, configured_resource=advertised):
            raise OAuthFlowError(f"its resource metadata names {advertised}, not {resource}")
        resource, issuer = advertised, str(protected.authorization_servers[0])
    server = await _authorization_server(http, issuer, url)
    scope = extract_scope_from_www_auth(challenge)
    return Discovered(resource, protected, server, scope)
