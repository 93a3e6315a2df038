"""Credentials: agents (MCP clients), approvers and event subscribers, each a separate list.

Tokens are configured as ``env:NAME`` (read from the environment), ``sha256:<hex>`` (only the
digest is kept in the file) or a literal (for local demos). Only SHA-256 digests are held in memory.
Beside them, JWTs of the issuers in ``auth.jwt`` (`gateway.auth.jwt`) hold the classes their
issuer maps them to; `Authenticator.identify` resolves both kinds.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from gateway.auth.jwt import JwtVerifier, TokenRefused, looks_like_jwt
from gateway.auth.oauth_metadata import ResourceMetadata
from gateway.config.jwt import CLASSES, CredentialClass, JwtIssuerConfig
from gateway.events.filters import EventFilter
from toolsets.context import Principal
from toolsets.errors import ConfigError, ConfigIssue

__all__ = [
    "AuthConfig",
    "Authenticator",
    "Credential",
    "CredentialConfig",
    "Identity",
    "Role",
    "bearer_token",
    "token_problem",
]

Role = CredentialClass
"""A credential class: the list a static token is in, or what a JWT earns."""


STATIC_LISTS: tuple[str, ...] = ("agents", "approvers", "subscribers", "workers")
"""The ``auth`` lists of static credentials, one per class."""


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
    jwt: list[JwtIssuerConfig] = Field(
        default_factory=list,
        description="Identity providers whose JWTs are accepted beside the static tokens.",
    )
    public_url: str | None = Field(
        None,
        pattern=r"^https?://[^/?#]+(/[^?#]*)?$",
        description=(
            "The gateway's URL as clients reach it (e.g. https://lockgate.example.com), for "
            "the OAuth resource metadata; default: the scheme and Host of each request."
        ),
    )

    @field_validator("jwt")
    @classmethod
    def _distinct_issuers(
        cls, value: list[JwtIssuerConfig], info: ValidationInfo
    ) -> list[JwtIssuerConfig]:
        """Principal ids stay apart: no issuer twice, no id_prefix starting another's, and no
        static credential id under an issuer's prefix (a token's subject could name it)."""
        issuers = [i.issuer for i in value]
        if twice := sorted({i for i in issuers if issuers.count(i) > 1}):
            raise ValueError(f"issuer {twice[0]!r} is configured twice")
        hint = "give each issuer an id_prefix of its own (e.g. 'acme:')"
        prefixes = sorted(i.id_prefix for i in value)
        for shorter, longer in itertools.pairwise(prefixes):
            if longer.startswith(shorter):  # sorted: a prefix sorts right before its extensions
                raise ValueError(
                    f"issuers share an id_prefix ({shorter!r} starts {longer!r}): {hint}, so "
                    "subjects of different issuers never name the same principal"
                )
        static = [c.id for name in STATIC_LISTS for c in info.data.get(name) or []]
        for issuer in value:
            if clash := next((i for i in static if i.startswith(issuer.id_prefix)), None):
                raise ValueError(
                    f"static credential id {clash!r} starts with the id_prefix "
                    f"{issuer.id_prefix!r} of issuer {issuer.issuer!r}: {hint} that no static "
                    "id starts with, so none of its tokens names a configured credential"
                )
        return value


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
    """Resolves bearer tokens (static or JWT) to principals, per role."""

    def __init__(self, config: AuthConfig) -> None:
        self._entries: dict[Role, tuple[_Entry, ...]] = {
            "agent": self._load(config.agents, "auth.agents"),
            "approver": self._load(config.approvers, "auth.approvers"),
            "subscriber": self._load(config.subscribers, "auth.subscribers"),
            "worker": self._load(config.workers, "auth.workers"),
        }
        self.jwt = JwtVerifier(config.jwt)
        self.metadata = ResourceMetadata(config.public_url, config.jwt)

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
        digest = _digest(token)
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
