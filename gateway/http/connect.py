"""The routes of connect links (``/connect/{token}``, `gateway.connect.ConnectPage`) and the
users' Connections page (``/connections``), when a server has per-caller credentials."""

from __future__ import annotations

from starlette.routing import BaseRoute

from gateway.connect import ConnectPage
from gateway.connect.page import StartConnect
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
    page = ConnectPage(gate.links, gate.store, vault, gate.modes, start_connect=start)
    return page.routes()
