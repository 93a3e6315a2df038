"""`OAuthProvider`: the ``oauth`` mode of one upstream (see docs/credentials.md).

Each principal connects their own account: `start_connect` gives the authorization URL,
``/oauth/callback`` (`finish`) seals the grant in the vault. Their connection authenticates with
`auth` (a `GrantAuth`); the provider is also the pool's `PrincipalSecrets`, whose "secret" is the
grant's identity (its connection id and when it was connected), never a token: a refresh keeps
the upstream connection, a new connect replaces it. What went wrong inside a connection's HTTP
exchange is kept per principal (`take_failure`) for the guard to tell the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import httpx2

from gateway.config.credentials import CredentialsConfig
from gateway.credentials.errors import NeedsReconnect
from gateway.credentials.flow_store import FlowStore
from gateway.credentials.locks import RefreshLocks
from gateway.credentials.oauth_auth import GrantAuth
from gateway.credentials.oauth_connect import Connects, Finished
from gateway.credentials.oauth_tokens import AuthServerDown, Grants, Held
from gateway.vault import Connection, Vault
from toolsets.errors import LockgateError

__all__ = ["Failure", "OAuthProvider"]


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a principal's call could not authenticate: ``reconnect`` (they must connect again)
    or ``unavailable`` (the authorization server failed; try later)."""

    kind: Literal["reconnect", "unavailable"]
    message: str


class OAuthProvider:
    """The ``oauth`` credentials of one server.

    Args:
        server: The upstream's name.
        url: Its MCP URL.
        settings: Its ``credentials``.
        vault: Where grants are sealed.
        locks: One refresh per grant at a time.
        redirect_uri: The gateway's ``/oauth/callback`` URL.
        flows: Where started connects are kept.
    """

    mode = "oauth"

    def __init__(
        self,
        server: str,
        url: str,
        settings: CredentialsConfig,
        vault: Vault,
        *,
        locks: RefreshLocks,
        redirect_uri: str,
        flows: FlowStore,
    ) -> None:
        self.server = server
        self.grants = Grants(server, vault, locks)
        self.connects = Connects(server, url, settings, self.grants, redirect_uri, flows=flows)
        self._tokens: dict[str, str] = {}
        self._failures: dict[str, Failure] = {}
        vault.listeners.append(self._changed)

    async def _changed(self, server: str, principal: str) -> None:
        if server == self.server:  # connected again, or revoked: read the vault anew
            self._tokens.pop(principal, None)

    async def connected(self, principal: str) -> bool:
        held = await self.grants.held(principal)
        return held is not None and held.grant.usable

    async def secret(self, principal: str) -> str | None:
        """The identity of ``principal``'s usable grant (`PrincipalSecrets`), or None."""
        held = await self.grants.held(principal)
        if held is None or not held.grant.usable:
            return None
        return f"{held.connection.id}:{held.grant.connected_at}"

    async def principals(self) -> list[str]:
        found = await self.grants.vault.connections()
        return [c.principal for c in found if c.server == self.server]

    async def start_connect(
        self, principal: str, *, call_ref: str | None = None, return_to: str | None = None
    ) -> str:
        return await self.connects.start(principal, call_ref=call_ref, return_to=return_to)

    async def finish(
        self, state: str, *, code: str | None, iss: str | None, error: str | None
    ) -> Finished:
        return await self.connects.finish(state, code=code, iss=iss, error=error)

    def auth(self, principal: str) -> httpx2.Auth:
        return GrantAuth(self, principal)

    async def revoke(self, principal: str, *, by: str) -> tuple[Connection, bool] | None:
        """Forget ``principal``'s grant (revoked at the authorization server when it can)."""
        self._tokens.pop(principal, None)
        return await self.grants.revoke(principal, by=by)

    async def prepare(self, principal: str, held: Held) -> None:
        """Before a call: ``principal``'s token, refreshed if it is about to expire, ready for
        the connection's requests; any earlier failure forgotten.

        Raises:
            NeedsReconnect: the grant is unusable or its refresh was refused.
            AuthServerDown: the refresh could not be done now.
        """
        self._failures.pop(principal, None)
        if not held.grant.usable:
            raise NeedsReconnect(self.server, held.grant.reason or "it was marked unusable")
        if held.grant.fresh():
            self._tokens[principal] = held.grant.token.access_token
            return
        token = await self.grants.renew(principal, held.grant.token.access_token)
        if token is None:
            raise NeedsReconnect(self.server, "it was revoked")
        self._tokens[principal] = token

    def take_failure(self, principal: str) -> Failure | None:
        """What went wrong in ``principal``'s last exchange, once."""
        return self._failures.pop(principal, None)

    def _failed(self, principal: str, exc: LockgateError) -> None:
        self._tokens.pop(principal, None)
        kind: Literal["reconnect", "unavailable"] = (
            "reconnect" if isinstance(exc, NeedsReconnect) else "unavailable"
        )
        self._failures[principal] = Failure(kind, str(exc))

    async def request_token(self, principal: str) -> str | None:
        if (token := self._tokens.get(principal)) is not None:
            return token
        try:
            token = await self.grants.access_token(principal)
        except LockgateError as exc:  # NeedsReconnect, AuthServerDown, the vault unreadable
            self._failed(principal, exc)
            return None
        if token is not None:
            self._tokens[principal] = token
        return token

    async def unauthorized(self, principal: str, used: str) -> str | None:
        self._tokens.pop(principal, None)
        try:
            token = await self.grants.renew(principal, used)
        except (NeedsReconnect, AuthServerDown) as exc:
            self._failed(principal, exc)
            return None
        if token is not None:
            self._tokens[principal] = token
        return token

    async def _mark(
        self, principal: str, reason: str, *, stepped_up: bool = False, scope: str | None = None
    ) -> None:
        await self.grants.fail(principal, reason, stepped_up=stepped_up, wanted_scope=scope)
        self._failed(principal, NeedsReconnect(self.server, reason))

    async def rejected(self, principal: str) -> None:
        await self._mark(principal, "the upstream refused your token (401)")

    async def step_up(self, principal: str, scope: str | None) -> None:
        wanted = f"the scope {scope!r}" if scope else "a larger scope"
        reason = f"the upstream needs {wanted} (403 insufficient_scope)"
        await self._mark(principal, reason, stepped_up=True, scope=scope)
