"""The credential provider of each non-shared mode, and `Credentials`, every provider of a
gateway by server.

A provider answers, for one server and a principal, whether that principal is connected and what
a connection needs: ``secret`` mode the secret itself; ``oauth`` an `httpx2.Auth` that adds the
principal's access token from the vault and refreshes it. Every provider is also the pool's
`PrincipalSecrets` (`secret`, `principals`). A provider with a browser flow
(`ConnectFlow`: ``oauth``) also gives the URL at which a user starts connecting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import httpx2

from gateway.credentials.errors import NoConnectFlow

__all__ = ["ConnectFlow", "CredentialProvider", "Credentials", "TokenAuthProvider"]


class CredentialProvider(Protocol):
    """One server's per-principal credentials (``credentials.mode`` other than ``shared``)."""

    server: str
    mode: str

    async def connected(self, principal: str) -> bool:
        """``principal`` has a usable credential for this server."""
        ...

    async def secret(self, principal: str) -> str | None:
        """What ``principal``'s connection is made with (``secret``: the secret; ``oauth``: the
        grant's identity, never a token: the connection's auth adds it), or None."""
        ...

    async def principals(self) -> list[str]:
        """The principals with a credential for this server."""
        ...


@runtime_checkable
class ConnectFlow(Protocol):
    """A provider whose users connect through their browser (``oauth``)."""

    async def start_connect(
        self, principal: str, *, call_ref: str | None = None, return_to: str | None = None
    ) -> str:
        """The URL at which ``principal`` starts connecting (the authorization server's, with
        PKCE and the ``resource`` indicator); the gateway's ``/oauth/callback`` finishes it.

        Args:
            principal: Whose connection it will be (the state is bound to it).
            call_ref: The held call waiting on this connection (carried back in events).
            return_to: Where the callback page sends the browser once connected.
        """
        ...


@runtime_checkable
class TokenAuthProvider(Protocol):
    """A provider whose connections authenticate with an `httpx2.Auth` (``oauth``)."""

    def auth(self, principal: str) -> httpx2.Auth:
        """``principal``'s auth for this server's HTTP connection (adds and refreshes the
        access token)."""
        ...


class Credentials:
    """Every per-principal server's provider, by server name."""

    def __init__(self, providers: Mapping[str, CredentialProvider]) -> None:
        self.providers = dict(providers)

    def mode(self, server: str) -> str | None:
        """``server``'s credentials mode, or None when it is shared (or unknown)."""
        found = self.providers.get(server)
        return None if found is None else found.mode

    async def connected(self, server: str, principal: str) -> bool:
        """``principal`` has a usable credential for ``server`` (a shared server: always)."""
        found = self.providers.get(server)
        return True if found is None else await found.connected(principal)

    async def start_connect(
        self,
        server: str,
        principal: str,
        *,
        call_ref: str | None = None,
        return_to: str | None = None,
    ) -> str:
        """The URL at which ``principal`` starts connecting to ``server``.

        Raises:
            NoConnectFlow: ``server``'s mode has no browser flow (``secret``), or it is shared.
            ConnectError: the flow cannot start (the authorization server is unreachable).
        """
        found: object = self.providers.get(server)
        if not isinstance(found, ConnectFlow):
            raise NoConnectFlow(server, self.mode(server) or "shared")
        return await found.start_connect(principal, call_ref=call_ref, return_to=return_to)
