"""``auth.jwt``: the identity providers whose JWTs the gateway accepts, one entry per issuer.

Each issuer names where its signing keys come from (``jwks_url``, a static public ``key``, or an
HMAC ``secret``), what a token must say (``issuer``, ``audience``), how long past expiry it is
still accepted (``leeway``), and how its claims become a lockgate principal: the id from
``subject_claim``, roles from ``roles_claim``, the tenant from ``tenant_claim``, and the
credential classes (``as``) it may grant, each earned by a scope or role (``require``).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, Final, Literal, Self, get_args
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gateway.config.events import EventFilter

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "CLASSES",
    "DEFAULT_ALGORITHMS",
    "HMAC_ALGORITHMS",
    "HMAC_MIN_BYTES",
    "CredentialClass",
    "JwtIssuerConfig",
    "claim_at",
    "resolve_value",
]

CredentialClass = Literal["agent", "approver", "subscriber", "worker"]
CLASSES: Final[tuple[CredentialClass, ...]] = get_args(CredentialClass)

ASYMMETRIC_ALGORITHMS: Final = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
HMAC_MIN_BYTES: Final = {"HS256": 32, "HS384": 48, "HS512": 64}
"""The shortest secret for each HMAC algorithm: its digest size (RFC 7518 section 3.2)."""
HMAC_ALGORITHMS: Final = frozenset(HMAC_MIN_BYTES)
DEFAULT_ALGORITHMS: Final = ("RS256", "ES256", "EdDSA")


def resolve_value(value: str) -> str:
    """``env:NAME`` read from the environment; anything else as written.

    Raises:
        ValueError: the variable is not set.
    """
    if not value.startswith("env:"):
        return value
    name = value.removeprefix("env:")
    found = os.environ.get(name)
    if not found:
        raise ValueError(f"environment variable {name!r} is not set: export it before starting")
    return found


def claim_at(claims: dict[str, Any], path: str) -> Any:
    """The claim at a dotted ``path`` (``realm_access.roles``), or None when absent."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


class JwtIssuerConfig(BaseModel):
    """One identity provider whose JWTs are accepted."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    issuer: str = Field(min_length=1, description="The exact 'iss' of its tokens.")
    audience: list[str] = Field(
        min_length=1,
        description="Accepted 'aud' values (a string or a list): this gateway's URL, e.g. "
        "https://lockgate.example.com/mcp.",
    )
    jwks_url: str | None = Field(None, description="Where its public keys are (https).")
    key: str | dict[str, Any] | None = Field(
        None,
        description="A static public key instead: PEM, a JWK (object or JSON), a JWK set, "
        "or env:NAME holding one.",
    )
    secret: str | None = Field(
        None,
        repr=False,  # a literal secret never shows in a repr (logs, tracebacks)
        description="An HMAC secret (HS256 only with one), >= 32 bytes; env:NAME recommended.",
    )
    algorithms: list[str] | None = Field(
        None, description="Accepted 'alg' values (default RS256, ES256, EdDSA; HS256 with secret)."
    )
    leeway: float = Field(30.0, ge=0, le=600, description="Seconds of clock skew tolerated.")
    subject_claim: str = Field("sub", min_length=1, description="Claim (dotted path): the id.")
    id_prefix: str = Field("", description="Put before the subject to make the principal id.")
    roles_claim: str | None = Field(
        None, description="Claim (dotted path) holding roles, e.g. realm_access.roles."
    )
    role_map: dict[str, str] | None = Field(
        None, description="Token role -> lockgate role; when set, unmapped roles are dropped."
    )
    tenant_claim: str | None = Field(None, description="Claim (dotted path) holding the tenant.")
    tenant: str | None = Field(None, min_length=1, description="A fixed tenant for all its tokens.")
    claims: list[str] = Field(
        default_factory=list, description="Claims (dotted paths) policies may read."
    )
    as_: list[CredentialClass] = Field(
        alias="as", min_length=1, description="Credential classes its tokens may be."
    )
    require: dict[CredentialClass, str] = Field(
        default_factory=dict,
        validate_default=True,
        description="What earns each class: 'scope:NAME' (scope or scp claim) or 'role:NAME'.",
    )
    events: EventFilter | None = Field(None, description="subscribers: which events they see.")
    jwks_max_age: float = Field(600.0, gt=0, description="Seconds a fetched key set is used.")
    jwks_min_refresh: float = Field(
        30.0, ge=0, description="Fewest seconds between fetches (unknown kid, failures)."
    )

    @field_validator("audience", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("jwks_url")
    @classmethod
    def _https(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname)):
            return value
        raise ValueError(f"jwks_url {value!r} must be https (plain http only on loopback)")

    @field_validator("algorithms")
    @classmethod
    def _algorithms(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return None
        if "none" in value:
            raise ValueError("algorithm 'none' is never accepted: remove it")
        known = ASYMMETRIC_ALGORITHMS | HMAC_ALGORITHMS
        if unknown := [a for a in value if a not in known]:
            raise ValueError(f"unknown algorithm {unknown[0]!r}: use some of {sorted(known)}")
        hmac = [a for a in value if a in HMAC_ALGORITHMS]
        if info.data.get("secret") is None and hmac:
            raise ValueError(f"{hmac[0]} is accepted only with a configured 'secret' (HMAC)")
        if info.data.get("secret") is not None and len(hmac) != len(value):
            raise ValueError("with a 'secret', only HS256, HS384 or HS512 may be accepted")
        return value

    @field_validator("require")
    @classmethod
    def _require(
        cls, value: dict[CredentialClass, str], info: ValidationInfo
    ) -> dict[CredentialClass, str]:
        classes = info.data.get("as_") or []
        if stray := [c for c in value if c not in classes]:
            raise ValueError(f"{stray[0]!r} is not listed in 'as'")
        for requirement in value.values():
            kind, _, name = requirement.partition(":")
            if kind not in {"scope", "role"} or not name:
                raise ValueError(f"{requirement!r}: use 'scope:NAME' or 'role:NAME'")
        if len(classes) > 1 and (loose := [c for c in classes if c not in value]):
            raise ValueError(
                f"'as' lists several classes, so 'require' must say what earns each (else every "
                f"token of this issuer would be all of them); missing: {', '.join(loose)}, e.g. "
                "require: {approver: 'scope:lockgate:approve'}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        sources = [n for n in ("jwks_url", "key", "secret") if getattr(self, n) is not None]
        if len(sources) != 1:
            raise ValueError("give exactly one of jwks_url, key or secret (where its keys are)")
        if self.tenant is not None and self.tenant_claim is not None:
            raise ValueError("give tenant or tenant_claim, not both")
        return self

    @property
    def accepted_algorithms(self) -> tuple[str, ...]:
        """The configured algorithms, or the defaults (``HS256`` with a secret)."""
        if self.algorithms is not None:
            return tuple(self.algorithms)
        return ("HS256",) if self.secret is not None else DEFAULT_ALGORITHMS
