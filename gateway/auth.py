"""Credentials: agents (MCP clients), approvers and event subscribers, each a separate list.

Tokens are configured as ``env:NAME`` (read from the environment), ``sha256:<hex>`` (only the
digest is kept in the file) or a literal (for local demos). Only SHA-256 digests are held in memory.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.events.filters import EventFilter
from toolsets.context import Principal
from toolsets.errors import ConfigError, ConfigIssue

__all__ = [
    "AuthConfig",
    "Authenticator",
    "CredentialConfig",
    "Role",
    "bearer_token",
    "token_problem",
]

Role = Literal["agent", "approver", "subscriber", "worker"]


class CredentialConfig(BaseModel):
    """One credential: who it is, its token, and its roles (for policies and approver rules)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=200)
    token: str = Field(min_length=1)
    roles: list[str] = Field(default_factory=list)
    claims: dict[str, str] = Field(default_factory=dict)
    tenant: str | None = Field(
        None,
        min_length=1,
        description=(
            "Partition: calls and events of a tenant are seen only by approvers and "
            "subscribers of the same tenant; credentials without one see only untenanted ones."
        ),
    )
    events: EventFilter | None = Field(
        None, description="subscribers: which events their stream carries (default: all)."
    )


class AuthConfig(BaseModel):
    """Separate credential lists; an agent's token never approves or subscribes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agents: list[CredentialConfig] = Field(default_factory=list)
    approvers: list[CredentialConfig] = Field(default_factory=list)
    subscribers: list[CredentialConfig] = Field(default_factory=list)
    workers: list[CredentialConfig] = Field(default_factory=list)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def _configured_digest(value: str, where: str) -> bytes:
    if value.startswith("sha256:"):
        try:
            return bytes.fromhex(value.removeprefix("sha256:"))
        except ValueError:
            raise ConfigError([ConfigIssue("", None, None, where, "bad sha256 hex")]) from None
    if value.startswith("env:"):
        name = value.removeprefix("env:")
        secret = os.environ.get(name)
        if not secret:
            message = (
                f"environment variable {name!r} is not set: export it before starting lockgate, "
                "or give the token's digest as sha256:<hex>"
            )
            raise ConfigError([ConfigIssue("", None, None, where, message)])
        return _digest(secret)
    return _digest(value)


def token_problem(value: str) -> str | None:
    """Why a configured token (literal, ``env:NAME`` or ``sha256:<hex>``) cannot be used."""
    try:
        _configured_digest(value, "")
    except ConfigError as exc:
        return exc.issues[0].message
    return None


@dataclass(frozen=True, slots=True)
class _Entry:
    digest: bytes
    principal: Principal
    events: EventFilter | None = None


class Authenticator:
    """Resolves bearer tokens to principals, per role."""

    def __init__(self, config: AuthConfig) -> None:
        self._entries: dict[Role, tuple[_Entry, ...]] = {
            "agent": self._load(config.agents, "auth.agents"),
            "approver": self._load(config.approvers, "auth.approvers"),
            "subscriber": self._load(config.subscribers, "auth.subscribers"),
            "worker": self._load(config.workers, "auth.workers"),
        }

    @staticmethod
    def _load(credentials: Iterable[CredentialConfig], where: str) -> tuple[_Entry, ...]:
        return tuple(
            _Entry(
                _configured_digest(c.token, f"{where}.{i}.token"),
                Principal(
                    id=c.id, roles=frozenset(c.roles), claims=dict(c.claims), tenant=c.tenant
                ),
                c.events,
            )
            for i, c in enumerate(credentials)
        )

    def required(self, role: Role) -> bool:
        """True when credentials are configured for ``role`` (so a token is required)."""
        return bool(self._entries[role])

    def authenticate(self, token: str | None, *roles: Role) -> Principal | None:
        """The principal holding ``token`` in any of ``roles``, or None."""
        found = self.subscription(token, *roles)
        return None if found is None else found[1]

    def subscription(
        self, token: str | None, *roles: Role
    ) -> tuple[Role, Principal, EventFilter | None] | None:
        """The first of ``roles`` whose credentials hold ``token``: the role, the principal and
        its event filter; None when no credential holds it (every entry is compared, in
        constant time)."""
        if not token:
            return None
        digest = _digest(token)
        found = None
        for role in roles:
            for entry in self._entries[role]:
                if hmac.compare_digest(entry.digest, digest):
                    found = found or (role, entry.principal, entry.events)
        return found


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
