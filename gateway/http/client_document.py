"""``GET /oauth/client-metadata.json``: the gateway's own Client ID Metadata Document
(`gateway.credentials.client_document`), public (authorization servers fetch it), served when an
``oauth`` server uses it as its client_id (an https ``auth.public_url``, no ``client`` or other
``client_metadata_url`` configured)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from gateway.credentials.client_document import DOCUMENT_PATH, document, document_url
from gateway.credentials.oauth import OAuthProvider
from gateway.gateway import Gateway

__all__ = ["client_document_routes"]

HEADERS = {"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"}
"""An authorization server may cache the document as HTTP caching allows (an hour)."""


def client_document_routes(gateway: Gateway) -> list[BaseRoute]:
    """The document's route, when an ``oauth`` server's connects use it (none otherwise)."""
    public_url = gateway.config.auth.public_url
    url = document_url(public_url)
    credentials = gateway.parts.credentials
    if public_url is None or url is None or credentials is None:
        return []
    users = [
        p.connects.settings
        for p in credentials.providers.values()
        if isinstance(p, OAuthProvider)
        and p.connects.settings.client is None
        and p.connects.settings.client_metadata_url == url
    ]
    if not users:
        return []
    body = document(public_url, users[0].client_name)  # names the gateway as the first does

    async def serve(request: Request) -> JSONResponse:
        return JSONResponse(body, headers=HEADERS)

    return [Route(DOCUMENT_PATH, serve, methods=["GET"])]
