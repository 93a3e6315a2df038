"""Credentials: agents (MCP clients), approvers and event subscribers, each a separate list.

Static tokens are held as the SHA-256 digests `gateway.config.auth.configured_digest` reads
from the config (``env:NAME``, ``sha256:<hex>`` or a literal), compared in constant time. Beside
them, JWTs of the issuers in ``auth.jwt`` (`gateway.auth.jwt`) hold the classes their issuer
maps them to; `Authenticator.identify` resolves both kinds.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.auth.jwt import JwtVerifier, TokenRefused, looks_like_jwt
from gateway.auth.oauth_metadata import ResourceMetadata, ToolScopes
from gateway.config.auth import AuthConfig, CredentialConfig, configured_digest, token_digest
from gateway.config.events import EventFilter
from gateway.config.jwt import CLASSES, CredentialClass
from toolsets.context import Principal

__all__ = ["Authenticator", "Credential", "Identity", "Role", "bearer_token"]

Role = CredentialClass
"""A credential class: the list a static token is in, or what a JWT earns."""


@dataclass(frozen=True, slots=True)
class _Entry:
    digest: bytes
    principal: Principal
    events: EventFilter | None = None


@dataclass(frozen=True, slots=True)
class Credential:
    """One credential class a token holds: the class, the principal and (subscribers) the
    events its stream may carry."""

    role: Role
    principal: Principal
    events: EventFilter | None = None


@dataclass(frozen=True, slots=True)
class Identity:
    """What a request's bearer token is.

    Attributes:
        credentials: Every class the token holds (none: refused or absent).
        presented: Whether a token was given at all.
        valid: Whether it is a token the gateway accepts (it may hold no class asked for).
        problem: Why a given token was refused, safe to show (never the token).
        via_jwt: Whether it was judged as a JWT.
    """

    credentials: tuple[Credential, ...] = ()
    presented: bool = False
    valid: bool = False
    problem: str | None = None
    via_jwt: bool = False

    def holding(self, *roles: Role) -> Credential | None:
        """The credential of the first of ``roles`` the token holds."""
        for role in roles:
            for credential in self.credentials:
                if credential.role == role:
                    return credential
        return None


ALL_ROLES: tuple[Role, ...] = CLASSES


class Authenticator:
    """Resolves bearer tokens (static or JWT) to principals, per role.

    Args:
        config: The ``auth`` section.
        tool_scopes: The scopes the policy requires of tool calls (the ``/mcp`` resource
            metadata lists them).
    """

    def __init__(self, config: AuthConfig, *, tool_scopes: ToolScopes | None = None) -> None:
        self._entries: dict[Role, tuple[_Entry, ...]] = {
            "agent": self._load(config.agents, "auth.agents"),
            "approver": self._load(config.approvers, "auth.approvers"),
            "subscriber": self._load(config.subscribers, "auth.subscribers"),
            "worker": self._load(config.workers, "auth.workers"),
        }
        self.jwt = JwtVerifier(config.jwt)
        self.metadata = ResourceMetadata(config.public_url, config.jwt, tool_scopes)

    @staticmethod
    def _load(credentials: Iterable[CredentialConfig], where: str) -> tuple[_Entry, ...]:
        return tuple(
            _Entry(
                configured_digest(c.token, f"{where}.{i}.token"),
                Principal(
                    id=c.id, roles=frozenset(c.roles), claims=dict(c.claims), tenant=c.tenant
                ),
                c.events,
            )
            for i, c in enumerate(credentials)
        )

    def required(self, role: Role) -> bool:
        """True when credentials (static or JWT) are configured for ``role`` (so a token is
        required)."""
        return bool(self._entries[role]) or self.jwt.grants(role)

    async def identify(self, token: str | None) -> Identity:
        """Every credential class ``token`` holds: a static token's, or a valid JWT's."""
        if not token:
            return Identity()
        if static := self._static(token):
            return Identity(static, presented=True, valid=True)
        if not (self.jwt.enabled and looks_like_jwt(token)):
            return Identity(presented=True, problem="unknown token")
        try:
            found = await self.jwt.verify(token)
        except TokenRefused as exc:
            return Identity(presented=True, problem=str(exc), via_jwt=True)
        held = tuple(Credential(c, found.principal, found.events) for c in found.classes)
        return Identity(held, presented=True, valid=True, via_jwt=True)

    def _static(self, token: str) -> tuple[Credential, ...]:
        """The first static credential of each role holding ``token`` (every entry is
        compared, in constant time)."""
        digest = token_digest(token)
        found: dict[Role, Credential] = {}
        for role in ALL_ROLES:
            for entry in self._entries[role]:
                if hmac.compare_digest(entry.digest, digest) and role not in found:
                    found[role] = Credential(role, entry.principal, entry.events)
        return tuple(found.values())

    async def prefetch(self) -> None:
        """Fetch the JWT issuers' key sets once (at start-up; failures are logged)."""
        await self.jwt.prefetch()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
