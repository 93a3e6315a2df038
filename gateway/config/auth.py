"""``auth``: the static credentials (agents, approvers, subscribers, workers), each a separate
list, beside the JWT issuers of ``auth.jwt``; and how a configured token is read.

Tokens are configured as ``env:NAME`` (read from the environment), ``sha256:<hex>`` (only the
digest is kept in the file) or a literal (for local demos); `configured_digest` reads each to the
SHA-256 digest that is all the gateway keeps in memory.
"""

from __future__ import annotations

import hashlib
import itertools
import os

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from gateway.config.events import EventFilter
from gateway.config.jwt import JwtIssuerConfig
from toolsets.errors import ConfigError, ConfigIssue

__all__ = [
    "STATIC_LISTS",
    "AuthConfig",
    "CredentialConfig",
    "configured_digest",
    "token_digest",
    "token_problem",
]

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


def token_digest(token: str) -> bytes:
    """The SHA-256 digest of a token, as the gateway keeps and compares it."""
    return hashlib.sha256(token.encode()).digest()


def configured_digest(value: str, where: str) -> bytes:
    """The digest of a configured token (literal, ``env:NAME`` or ``sha256:<hex>``).

    Raises:
        ConfigError: naming ``where`` (e.g. ``auth.agents.0.token``) and what is wrong.
    """
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
        return token_digest(secret)
    return token_digest(value)


def token_problem(value: str) -> str | None:
    """Why a configured token (literal, ``env:NAME`` or ``sha256:<hex>``) cannot be used."""
    try:
        configured_digest(value, "")
    except ConfigError as exc:
        return exc.issues[0].message
    return None
