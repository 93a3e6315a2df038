"""The routes of connect links (``/connect/{token}``, `gateway.connect.ConnectPage`), the
browser's sign-in (`gateway.connect.signin.BrowserSignin`, when ``connect.signin`` is set) and
the users' Connections page (``/connections``), when a server has per-caller credentials."""

from __future__ import annotations

from starlette.routing import BaseRoute

from gateway.connect import ConnectPage
from gateway.connect.connections_page import ConnectionsPage
from gateway.connect.page import StartConnect
from gateway.connect.signin import BrowserSignin, session_key
from gateway.gateway import Gateway

__all__ = ["connect_routes"]


def connect_routes(gateway: Gateway) -> list[BaseRoute]:
    """The connect routes of ``gateway`` (none when no server has per-caller credentials)."""
    parts = gateway.parts
    gate, vault = parts.connect, parts.vault
    if gate is None or vault is None:
        return []
    credentials = getattr(parts, "credentials", None)  # the oauth flow, where it is built
    start: StartConnect | None = getattr(credentials, "start_connect", None)
    settings = gateway.config.connect.signin
    signin = None
    if settings is not None:
        key = session_key(settings, vault.keyring)
        signin = BrowserSignin(settings, gate.links.base_url, key)
    base = gate.links.base_url
    page = ConnectPage(
        gate.links, gate.store, vault, gate.modes, start_connect=start, signin=signin
    )
    mine = ConnectionsPage(vault, gate.modes, base, start_connect=start, signin=signin)
    return [*page.routes(), *mine.routes(), *(signin.routes() if signin is not None else [])]
