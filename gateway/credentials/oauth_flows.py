"""`ConnectFlows`: the started ``oauth`` connects of one server, kept in the storage backend
(`FlowStore`) so the browser's ``/oauth/callback`` may land on any replica.

A started flow is sealed whole with the vault's current key (AES-GCM, `Keyring`): its PKCE
verifier and its registered client (with a secret, if any) are never stored in clear. Its row is
found by the SHA-256 of the state (the state itself, which the browser's URL carries, is not
stored) and names its server and principal; the associated data binds the sealed flow to all
three. Taking a state back removes its row in the same statement: a state is used once, across
replicas. An expired one is refused as such; rows are forgotten an hour after they expire.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Final

from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, ProtectedResourceMetadata

from gateway.credentials.errors import ConnectError
from gateway.credentials.flow_store import FlowStore, SealedFlow
from gateway.credentials.oauth_discovery import Discovered
from gateway.vault import Keyring, VaultError

__all__ = ["FORGET_AFTER", "ConnectFlows", "Flow"]

FORGET_AFTER: Final = 3600.0
"""Seconds an expired flow is kept, so its link is refused as expired rather than unknown."""


@dataclass(frozen=True, slots=True)
class Flow:
    """A started connect: what the callback needs to finish it."""

    principal: str
    found: Discovered
    client: OAuthClientInformationFull
    verifier: str
    scope: str | None
    call_ref: str | None
    return_to: str | None


def _dump(flow: Flow) -> str:
    found = flow.found
    protected = None if found.protected is None else found.protected.model_dump(mode="json")
    return json.dumps(
        {
            "resource": found.resource,
            "protected": protected,
            "server": found.server.model_dump(mode="json", exclude_none=True),
            "challenged_scope": found.challenged_scope,
            "client": flow.client.model_dump(mode="json", exclude_none=True),
            "verifier": flow.verifier,
            "scope": flow.scope,
            "call_ref": flow.call_ref,
            "return_to": flow.return_to,
        }
    )


def _load(principal: str, text: str) -> Flow:
    data: dict[str, Any] = json.loads(text)
    protected = data["protected"] and ProtectedResourceMetadata.model_validate(data["protected"])
    found = Discovered(
        resource=data["resource"],
        protected=protected,
        server=OAuthMetadata.model_validate(data["server"]),
        challenged_scope=data["challenged_scope"],
    )
    client = OAuthClientInformationFull.model_validate(data["client"])
    return Flow(
        principal, found, client, data["verifier"], data["scope"], data["call_ref"],
        data["return_to"],
    )  # fmt: skip


def _key(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _bound(principal: str, key: str) -> str:
    """The associated data's principal part: a sealed flow opens for its own state only (and
    never as a vault secret)."""
    return f"{principal}\0oauth-connect\0{key}"


class ConnectFlows:
    """The started connects of ``server``, in ``store``, sealed with ``keyring``.

    Args:
        server: The upstream's name.
        store: Where started flows live (shared by the replicas on PostgreSQL).
        keyring: The vault's keys.
        ttl: Seconds a connect link works (``credentials.connect_timeout``).
    """

    def __init__(self, server: str, store: FlowStore, keyring: Keyring, *, ttl: float) -> None:
        self.server, self.store, self.keyring, self.ttl = server, store, keyring, ttl

    async def keep(self, state: str, flow: Flow) -> None:
        """Keep ``flow`` under ``state`` for `ttl` seconds."""
        key = _key(state)
        key_id, sealed = self.keyring.seal(
            _dump(flow), server=self.server, principal=_bound(flow.principal, key)
        )
        now = time.time()
        sealed_flow = SealedFlow(key, self.server, flow.principal, now + self.ttl, key_id, sealed)
        await self.store.put(sealed_flow, forget_before=now - FORGET_AFTER)

    async def owns(self, state: str) -> bool:
        """``state`` was started for this server (and not taken yet; maybe expired)."""
        return bool(state) and await self.store.server_of(_key(state)) == self.server

    async def take(self, state: str) -> Flow:
        """The flow of ``state``, spent: a second take of it fails, on any replica.

        Raises:
            ConnectError: the state is unknown or used, expired, or does not open.
        """
        found = await self.store.take(_key(state), self.server)
        if found is None:
            raise ConnectError(self.server, "this connect link is unknown, used or expired")
        late = time.time() - found.expires_at
        if late >= 0:
            raise ConnectError(
                self.server,
                f"this connect link expired {late:.0f} s ago (a link works for {self.ttl:g} s)",
            )
        try:
            text = self.keyring.open(
                found.key_id,
                found.sealed,
                server=self.server,
                principal=_bound(found.principal, found.key),
                connection_id=f"(the connect of {found.principal!r})",
            )
        except VaultError:  # VaultKeyMissing too
            problem = (
                "this connect link's flow does not open with this gateway's vault keys (give "
                "every replica the same vault.key; keep a changed one in vault.previous_keys)"
            )
            raise ConnectError(self.server, problem) from None
        return _load(found.principal, text)
