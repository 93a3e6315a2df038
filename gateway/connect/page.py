"""``/connect/{token}``: where a connect link leads.

``GET`` checks the link (sealed, not expired, its held record still waiting, and, where a
sign-in provider is configured, the signed-in subject is the link's principal), then: for a
``secret`` server a small form where the user pastes their secret; for an ``oauth`` server a
redirect to the authorization server (the link is spent there). ``POST`` (the form; same
origin only, with the form's CSRF token) spends the link and stores the secret in the vault,
which tells the gate: the held call runs.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
from typing import Protocol
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.approvals.pending import PendingCall
from gateway.approvals.store import PendingStore
from gateway.connect.links import ConnectLinks, LinkPayload, LinkRefused, used
from gateway.vault import Vault, VaultError
from gateway.vault.vault import MAX_SECRET
from toolsets.context import Principal
from toolsets.errors import LockgateError
from toolsets.upstream.per_principal import TENANT_SEPARATOR, principal_key

__all__ = ["HEADERS", "ConnectPage", "SignedIn", "StartConnect", "page", "same_origin"]

_CSP = (
    "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make a form's Origin "null"
    "Cache-Control": "no-store",
}
_STATUS = {"malformed": 400, "expired": 410, "used": 410, "principal": 403}


class StartConnect(Protocol):
    """`gateway.credentials.Credentials.start_connect`: a browser flow's first URL."""

    async def __call__(
        self, server: str, principal: str, *, call_ref: str | None, return_to: str | None
    ) -> str: ...


class SignedIn(Protocol):
    """The browser's sign-in (`gateway.connect.signin.BrowserSignin`)."""

    def subject(self, request: Request) -> str | None:
        """The principal signed in on this browser, or None."""
        ...

    async def start(self, request: Request) -> Response:
        """Send the browser to sign in, then back here."""
        ...


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    """A small page in the web pages' style (``body`` is HTML already escaped)."""
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{html.escape(title)}</title><link rel="stylesheet" href="/approvals/app.css">'
        f"</head><body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def refused(exc: LinkRefused) -> HTMLResponse:
    return page("Link refused", f'<p id="error">{html.escape(str(exc))}</p>', _STATUS[exc.reason])


class ConnectPage:
    """The routes of connect links.

    Args:
        links: Opens and spends links.
        store: The held records (and the spent nonces).
        vault: Where a pasted secret goes.
        modes: Each per-caller server's ``credentials.mode``.
        start_connect: The browser flow of ``oauth`` servers (None: not available).
        signin: The browser sign-in, when a provider is configured.
    """

    def __init__(
        self,
        links: ConnectLinks,
        store: PendingStore,
        vault: Vault,
        modes: dict[str, str],
        *,
        start_connect: StartConnect | None = None,
        signin: SignedIn | None = None,
    ) -> None:
        self.links, self.store, self.vault, self.modes = links, store, vault, modes
        self.start_connect, self.signin = start_connect, signin
        self._csrf_key = secrets.token_bytes(32)

    def routes(self) -> list[BaseRoute]:
        return [Route("/connect/{token}", self.endpoint, methods=["GET", "POST"])]

    async def endpoint(self, request: Request) -> Response:
        token: str = request.path_params["token"]
        try:
            payload = await self._check(request, token)
        except LinkRefused as exc:
            return refused(exc)
        if payload is None:
            assert self.signin is not None
            return await self.signin.start(request)
        if request.method == "POST":
            return await self._post(request, token, payload)
        if self.modes.get(payload.server) == "secret":
            return self._form(token, payload)
        return await self._redirect(request, payload)

    async def _check(self, request: Request, token: str) -> LinkPayload | None:
        """The link's payload once it may be used here (None: the browser must sign in).

        Raises:
            LinkRefused: not valid, expired, used, or another user's.
        """
        payload = self.links.open(token)
        call = await self.store.get(payload.pending_id)
        if call is None or call.kind != "connect" or _key(call) != payload.principal:
            raise LinkRefused("malformed", "this connect link is not valid")
        if self.signin is not None:
            subject = self.signin.subject(request)
            if subject is None:
                return None
            if not hmac.compare_digest(subject.encode(), call.principal.encode()):
                raise LinkRefused(
                    "principal",
                    "this connect link belongs to another user: sign in as the user whose call "
                    "it is, or call the tool yourself for your own link",
                )
        if call.state != "pending":
            raise used(payload.server)
        return payload

    def _form(self, token: str, payload: LinkPayload) -> HTMLResponse:
        server = html.escape(payload.server)
        body = (
            f"<p>Paste your secret for <strong>{server}</strong> (signed in as "
            f"<strong>{html.escape(payload.principal.rpartition(TENANT_SEPARATOR)[2])}</strong>"
            "). It is stored encrypted and "
            "never shown again; the held call then runs.</p>"
            f'<form method="post" action="/connect/{html.escape(token)}">'
            f'<input type="hidden" name="csrf" value="{self._csrf(token)}">'
            f'<label>Secret <input type="password" name="secret" required maxlength="{MAX_SECRET}"'
            ' autocomplete="off"></label> <button type="submit">Connect</button></form>'
        )
        return page(f"Connect {payload.server}", body)

    def _csrf(self, token: str) -> str:
        return hmac.new(self._csrf_key, token.encode(), hashlib.sha256).hexdigest()

    async def _post(self, request: Request, token: str, payload: LinkPayload) -> Response:
        origin = request.headers.get("origin")
        if origin is None or not same_origin(origin, request, self.links.base_url):
            return page("Link refused", '<p id="error">cross-site form refused</p>', 403)
        form = await request.form(max_files=0, max_fields=4)
        csrf, secret = form.get("csrf"), form.get("secret")
        if not isinstance(csrf, str) or not hmac.compare_digest(csrf, self._csrf(token)):
            return page("Link refused", '<p id="error">the form is stale: open the link</p>', 403)
        if self.modes.get(payload.server) != "secret" or not isinstance(secret, str):
            return page("Link refused", '<p id="error">no secret was sent</p>', 400)
        try:
            await self.links.spend(payload, self.store)
            await self.vault.set(payload.server, payload.principal, secret)
        except LinkRefused as exc:
            return refused(exc)
        except VaultError as exc:
            return page("Not connected", f'<p id="error">{html.escape(str(exc))}</p>', 400)
        body = f"<p>Connected to <strong>{html.escape(payload.server)}</strong>. {_BACK}</p>"
        return page("Connected", body)

    async def _redirect(self, request: Request, payload: LinkPayload) -> Response:
        if self.start_connect is None:
            text = f"{payload.server!r} cannot be connected in the browser by this gateway"
            return page("Not connected", f'<p id="error">{html.escape(text)}</p>', 400)
        try:
            await self.links.spend(payload, self.store)
            url = await self.start_connect(
                payload.server,
                payload.principal,
                call_ref=payload.pending_id,
                return_to=f"{self.links.base_url}/connections",
            )
        except LinkRefused as exc:
            return refused(exc)
        except LockgateError as exc:  # the authorization server is unreachable: it says so
            return page("Not connected", f'<p id="error">{html.escape(str(exc))}</p>', 502)
        return RedirectResponse(url, status_code=303, headers=HEADERS)


_BACK = "Go back to your agent: the held call runs (or call the tool again)."


def _key(call: PendingCall) -> str:
    """The vault key of a held record's principal (its id, qualified by its tenant)."""
    return principal_key(Principal(id=call.principal, tenant=call.tenant))


def same_origin(origin: str, request: Request, base_url: str) -> bool:
    own = f"{request.url.scheme}://{request.url.netloc}"
    parts = urlsplit(base_url)
    return origin in (own, f"{parts.scheme}://{parts.netloc}")
