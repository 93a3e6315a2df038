"""``/connections``: a signed-in user's own connections (`gateway.connect.signin`): each server
with per-caller credentials, whether they connected it (since when; scopes and expiry where the
mode keeps them; never a token or secret), and a form to connect (paste a secret, or go to the
authorization server) or revoke. Forms are same-origin only, with a token bound to the user.

Without ``connect.signin`` the page says how to manage connections instead (the CLI and
``/api/connections``, with the caller's own token); the operator console keeps its section of
everyone's connections.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import time
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from gateway.connect.page import HEADERS, SignedIn, StartConnect, page, same_origin
from gateway.vault import Vault, VaultError
from gateway.vault.record import Connection
from gateway.vault.vault import MAX_SECRET
from toolsets.errors import LockgateError

__all__ = ["ConnectionsPage"]

_NO_SIGNIN = (
    "<p>This gateway has no browser sign-in (<code>connect.signin</code>): manage your "
    "connections with <code>lockgate connections list|set|connect|revoke</code> or "
    "<code>/api/connections</code> and your own token.</p>"
)


class ConnectionsPage:
    """The users' Connections page.

    Args:
        vault: The connections.
        modes: Each per-caller server's ``credentials.mode``.
        base_url: The gateway's URL as browsers reach it.
        start_connect: The browser flow of ``oauth`` servers (None: not available).
        signin: The browser sign-in (None: the page explains how else to connect).
    """

    def __init__(
        self,
        vault: Vault,
        modes: Mapping[str, str],
        base_url: str,
        *,
        start_connect: StartConnect | None = None,
        signin: SignedIn | None = None,
    ) -> None:
        self.vault, self.modes, self.base_url = vault, dict(modes), base_url
        self.start_connect, self.signin = start_connect, signin
        self._key = secrets.token_bytes(32)

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/connections", self.list, methods=["GET"]),
            Route("/connections/{server}/{action}", self.act, methods=["POST"]),
        ]

    async def list(self, request: Request) -> Response:
        if self.signin is None:
            return page("Your connections", _NO_SIGNIN)
        who = self.signin.subject(request)
        if who is None:
            return await self.signin.start(request)
        found = {c.server: c for c in await self.vault.connections(who)}
        rows = "".join(self._row(server, found.get(server), who) for server in sorted(self.modes))
        body = (
            f"<p>Signed in as <strong>{html.escape(who)}</strong>.</p>"
            '<table id="connections"><thead><tr><th scope="col">Server</th>'
            '<th scope="col">Status</th><th scope="col">Action</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
        )
        return page("Your connections", body)

    def _row(self, server: str, connection: Connection | None, who: str) -> str:
        name = html.escape(server)
        csrf = f'<input type="hidden" name="csrf" value="{self._csrf(who)}">'
        if connection is not None:
            status = f"connected since {_when(connection.created_at)}{_extra(connection)}"
            action = f'<form method="post" action="/connections/{name}/revoke">{csrf}'
            action += '<button type="submit">Revoke</button></form>'
        elif self.modes[server] == "secret":
            status = "not connected"
            action = (
                f'<form method="post" action="/connections/{name}/set">{csrf}<label>Secret '
                f'<input type="password" name="secret" required maxlength="{MAX_SECRET}" '
                'autocomplete="off"></label> <button type="submit">Connect</button></form>'
            )
        else:
            status = "not connected"
            action = f'<form method="post" action="/connections/{name}/connect">{csrf}'
            action += '<button type="submit">Connect</button></form>'
        return f'<tr data-server="{name}"><td>{name}</td><td>{status}</td><td>{action}</td></tr>'

    def _csrf(self, who: str) -> str:
        return hmac.new(self._key, who.encode(), hashlib.sha256).hexdigest()

    async def act(self, request: Request) -> Response:
        server, action = request.path_params["server"], request.path_params["action"]
        who = self.signin.subject(request) if self.signin is not None else None
        origin = request.headers.get("origin")
        form = await request.form(max_files=0, max_fields=4)
        csrf = form.get("csrf")
        if (
            who is None
            or origin is None
            or not same_origin(origin, request, self.base_url)
            or not isinstance(csrf, str)
            or not hmac.compare_digest(csrf, self._csrf(who))
        ):
            return page("Refused", '<p id="error">sign in and use the page\'s own form</p>', 403)
        if server not in self.modes:
            return page("Refused", '<p id="error">no such server</p>', 404)
        try:
            return await self._act(server, action, who, form.get("secret"))
        except LockgateError as exc:  # names the thing and the fix, never the secret
            return page("Not done", f'<p id="error">{html.escape(str(exc))}</p>', 400)

    async def _act(self, server: str, action: str, who: str, secret: object) -> Response:
        back = RedirectResponse(f"{self.base_url}/connections", 303, headers=HEADERS)
        if action == "revoke":
            await self.vault.revoke(server, who, by=who)
            return back
        if action == "set" and self.modes[server] == "secret" and isinstance(secret, str):
            await self.vault.set(server, who, secret)
            return back
        if action == "connect" and self.start_connect is not None:
            url = await self.start_connect(
                server, who, call_ref=None, return_to=f"{self.base_url}/connections"
            )
            return RedirectResponse(url, 303, headers=HEADERS)
        raise VaultError(f"{server!r} cannot be connected that way here")


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


def _extra(connection: Connection) -> str:
    """Scopes and expiry, where the connection's mode keeps them."""
    scopes = getattr(connection, "scopes", None)
    expires = getattr(connection, "expires_at", None)
    text = f"; scopes {html.escape(' '.join(scopes))}" if scopes else ""
    return text + (f"; expires {_when(expires)}" if isinstance(expires, int | float) else "")
