"""``GET /oauth/callback``: where an authorization server sends the user's browser back after an
``oauth`` connect (`gateway.credentials.oauth`).

The state (single use, expiring, bound to the server and principal the connect was started for)
says which connect it finishes; the code is exchanged and the grant sealed in the vault. The page
says which server is now connected, or what went wrong and how to start again; it never shows a
code or token, is not cached, not framed, and sends no referrer (the URL carried the code).
"""

from __future__ import annotations

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.credentials import ConnectError, Credentials
from gateway.credentials.oauth import OAuthProvider
from gateway.credentials.oauth_connect import CALLBACK_PATH
from gateway.gateway import Gateway

__all__ = ["oauth_routes"]

log = logging.getLogger("lockgate.credentials")

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
}
UNKNOWN = (
    "This connect link is unknown, already used or expired. Start again with `lockgate "
    "connections connect SERVER`."
)


def _page(title: str, text: str, status: int) -> HTMLResponse:
    body = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=HEADERS)


def _local(path: str | None) -> str | None:
    """``path`` when it is a path on this gateway (never another site: no open redirect)."""
    if path and path.startswith("/") and not path.startswith("//") and "\\" not in path:
        return path
    return None


class _Callback:
    def __init__(self, credentials: Credentials) -> None:
        self.providers = [p for p in credentials.providers.values() if isinstance(p, OAuthProvider)]

    async def handle(self, request: Request) -> Response:
        query = request.query_params
        state = query.get("state") or ""
        owner = None
        for provider in self.providers:  # started on any replica (the store is shared)
            if await provider.connects.owns(state):
                owner = provider
                break
        if owner is None:
            return _page("Not connected", UNKNOWN, 400)
        try:
            done = await owner.finish(
                state, code=query.get("code"), iss=query.get("iss"), error=query.get("error")
            )
        except ConnectError as exc:
            log.warning("%s", exc)
            return _page("Not connected", str(exc), 400)
        back = _local(done.return_to)
        if back is not None:
            return RedirectResponse(back, status_code=303, headers=HEADERS)
        text = (
            f"Your account is connected to {owner.server!r} (connection {done.connection.id}). "
            "You can close this window and call its tools again."
        )
        return _page("Connected", text, 200)


def oauth_routes(gateway: Gateway) -> list[BaseRoute]:
    """The callback route, when some server is in ``oauth`` mode."""
    credentials = gateway.parts.credentials
    if credentials is None or not any(
        isinstance(p, OAuthProvider) for p in credentials.providers.values()
    ):
        return []
    return [Route(CALLBACK_PATH, _Callback(credentials).handle, methods=["GET"])]
