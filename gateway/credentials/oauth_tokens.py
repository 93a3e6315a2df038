"""`Grants`: one server's OAuth grants in the vault, used, refreshed once at a time, marked for
reconnect, revoked; each change put on record (``credential.refreshed``, ``credential.failed``,
``credential.revoked``) with the connection id, scopes and expiry, never a token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import httpx2

from gateway.credentials.errors import NeedsReconnect
from gateway.credentials.locks import RefreshLocks
from gateway.credentials.oauth_client import TokenRefused, refresh, revoke
from gateway.credentials.oauth_grant import Grant
from gateway.events.model import Event
from gateway.vault import Connection, Vault
from toolsets.errors import LockgateError

__all__ = ["AuthServerDown", "Grants", "Held"]

log = logging.getLogger("lockgate.credentials")
HTTP_TIMEOUT = httpx2.Timeout(20.0)
REFUSALS = frozenset({"invalid_grant", "no_refresh_token", "unauthorized_client", "invalid_client"})
"""Token endpoint errors that end a grant (anything else, e.g. a 5xx, is the server's trouble)."""


class AuthServerDown(LockgateError):
    """The authorization server of a server could not refresh a token just now."""

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(
            f"the authorization server of {server!r} could not refresh your token ({problem}): "
            "try again later; your connection is kept"
        )


@dataclass(frozen=True, slots=True)
class Held:
    """A principal's connection and its grant."""

    connection: Connection
    grant: Grant


def http_client() -> httpx2.AsyncClient:
    """A client for the authorization server (discovery, registration, tokens)."""
    return httpx2.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False)


class Grants:
    """The grants of ``server``'s callers in ``vault``.

    Args:
        server: The upstream's name.
        vault: Where grants are sealed.
        locks: One refresh per grant at a time (across replicas with PostgreSQL).
    """

    def __init__(self, server: str, vault: Vault, locks: RefreshLocks) -> None:
        self.server, self.vault, self.locks = server, vault, locks

    async def held(self, principal: str, *, fresh: bool = False) -> Held | None:
        """``principal``'s connection and grant, or None when they have none (``fresh``: read
        from the store, not as opened a moment ago)."""
        found = await self.vault.entry(self.server, principal, fresh=fresh)
        if found is None:
            return None
        connection, sealed = found
        return Held(connection, Grant.load(sealed))

    async def current(self, principal: str) -> Held | None:
        """``principal``'s connection and grant as a call needs them: as read a moment ago while
        its token is fresh, else from the store (another replica may have refreshed it since,
        and `renew` must be told the token it replaces, not an older one)."""
        found = await self.held(principal)
        if found is None or found.grant.fresh():
            return found
        return await self.held(principal, fresh=True)

    async def access_token(self, principal: str) -> str | None:
        """``principal``'s access token, refreshed first when it is (nearly) expired; None
        when they have no usable grant.

        Raises:
            NeedsReconnect: the refresh was refused (the grant is now marked so).
            AuthServerDown: the authorization server could not be reached or failed.
        """
        found = await self.current(principal)
        if found is None or not found.grant.usable:
            return None
        if found.grant.fresh():
            return found.grant.token.access_token
        return await self.renew(principal, found.grant.token.access_token)

    async def renew(self, principal: str, stale: str) -> str | None:
        """A new access token in place of ``stale`` (refreshed by this call, or by another
        replica meanwhile); None when the grant is gone.

        Raises:
            NeedsReconnect, AuthServerDown: as `access_token`.
        """
        async with self.locks.hold(f"{self.server}\0{principal}"):
            found = await self.held(principal, fresh=True)  # again, under the lock
            if found is None or not found.grant.usable:
                return None
            grant = found.grant
            if grant.token.access_token != stale and grant.fresh(margin=0.0):
                return grant.token.access_token  # refreshed meanwhile (another replica)
            try:
                async with http_client() as http:
                    token = await refresh(http, grant)
            except TokenRefused as exc:
                if exc.error not in REFUSALS:
                    raise AuthServerDown(self.server, str(exc)) from None
                reason = f"the authorization server refused to refresh it: {exc.error}"
                await self.fail(principal, reason)
                raise NeedsReconnect(self.server, reason) from None
            except httpx2.HTTPError as exc:
                raise AuthServerDown(self.server, type(exc).__name__) from None
            renewed = grant.refreshed(token)
            await self.vault.update(self.server, principal, renewed.dump())
        await self._record("credential.refreshed", found.connection, renewed)
        return renewed.token.access_token

    async def fail(
        self,
        principal: str,
        reason: str,
        *,
        stepped_up: bool = False,
        wanted_scope: str | None = None,
    ) -> None:
        """Mark ``principal``'s grant unusable (they must connect again, with a larger scope
        when ``stepped_up``), once."""
        found = await self.held(principal, fresh=True)
        if found is None or not found.grant.usable:
            return
        broken = found.grant.broken(reason, stepped_up=stepped_up, wanted_scope=wanted_scope)
        await self.vault.update(self.server, principal, broken.dump())
        await self._record("credential.failed", found.connection, broken)

    async def revoke(self, principal: str, *, by: str) -> tuple[Connection, bool] | None:
        """Forget ``principal``'s grant, revoked first at the authorization server when it has
        a revocation endpoint; (the connection, whether the server revoked it), or None."""
        found = await self.held(principal)
        if found is None:
            return None
        revoked = False
        try:
            async with http_client() as http:
                revoked = await revoke(http, found.grant)
        except httpx2.HTTPError as exc:  # forgotten here all the same
            log.warning("%s: revoking at the authorization server failed (%s)", self.server, exc)
        gone = await self.vault.revoke(self.server, principal, by=by, mode="oauth")
        return None if gone is None else (gone, revoked)

    async def _record(self, type: str, connection: Connection, grant: Grant) -> None:
        data = {
            "connection_id": connection.id,
            "server": connection.server,
            "principal": connection.principal,
            "mode": "oauth",
            **grant.public(),
        }
        await self.vault.record(Event(type=type, data=data))
