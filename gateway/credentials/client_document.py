"""The gateway's own Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document,
the registration the MCP authorization spec prefers to dynamic registration).

Under an https ``auth.public_url`` the gateway serves it at `DOCUMENT_PATH`, and its URL is the
``client_id`` of every ``oauth`` server at authorization servers advertising
``client_id_metadata_document_supported``, unless the server's ``credentials`` name a
pre-registered ``client``, another document (``client_metadata_url``) or turn it off
(``client_metadata_url: none``). A client_id must be an https URL with a path, so a gateway
reached over http registers dynamically, as before.
"""

from __future__ import annotations

from typing import Any, Final

from mcp.client.auth.utils import is_valid_client_metadata_url
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyHttpUrl, AnyUrl

from gateway.config.credentials import CIMD_OFF, CredentialsConfig
from gateway.credentials.oauth_connect import CALLBACK_PATH

__all__ = ["DOCUMENT_PATH", "document", "document_url", "resolved"]

DOCUMENT_PATH: Final = "/oauth/client-metadata.json"
"""Where the gateway serves its document (on its public URL)."""
CONNECTIONS_PATH: Final = "/connections"
"""The users' Connections page: the document's ``client_uri``."""


def document_url(public_url: str | None) -> str | None:
    """The URL of the gateway's own document under ``public_url``; None unless it is https
    (a client_id must be an https URL with a path)."""
    if public_url is None:
        return None
    url = public_url.rstrip("/") + DOCUMENT_PATH
    return url if is_valid_client_metadata_url(url) else None


def resolved(settings: CredentialsConfig, public_url: str | None) -> CredentialsConfig:
    """``settings`` with the Client ID Metadata Document URL its connects use: the configured
    one, else the gateway's own; None when turned off or the gateway has none (dynamic
    registration)."""
    configured = settings.client_metadata_url
    url = None if configured == CIMD_OFF else configured or document_url(public_url)
    return settings.model_copy(update={"client_metadata_url": url})


def document(public_url: str, client_name: str) -> dict[str, Any]:
    """The gateway's document under the https ``public_url``: a public client (no secret; the
    spec forbids shared secrets) with the authorization code and refresh grants, coming back
    to ``/oauth/callback``. No ``scope``: one document serves every upstream, each connect
    asks for its own.

    Raises:
        ValueError: ``public_url`` is not https (the gateway has no document there).
    """
    url = document_url(public_url)
    if url is None:
        raise ValueError(f"no Client ID Metadata Document under {public_url!r} (not https)")
    base = public_url.rstrip("/")
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(base + CALLBACK_PATH)],
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name=client_name,
        client_uri=AnyHttpUrl(base + CONNECTIONS_PATH),
        application_type="web",
    )
    return {"client_id": url, **metadata.model_dump(mode="json", exclude_none=True)}
