"""``connect``: how a call from a caller who has not connected a per-caller server yet is held
(`gateway.connect`): how long its connect link lives, how long a client that can open links waits,
and the identity provider a browser signs in with before connecting."""

from __future__ import annotations

from pydantic import Field

from gateway.config._strict import Strict

__all__ = ["ConnectConfig", "SigninConfig"]


class SigninConfig(Strict):
    """The OpenID Connect provider a browser signs in with (authorization code flow with PKCE)
    before a connect link does anything: the signed-in subject must be the link's principal."""

    issuer: str = Field(
        pattern=r"^https?://[^?#]+$", description="The provider's issuer URL (its discovery base)."
    )
    client_id: str = Field(min_length=1, description="The gateway's client id at the provider.")
    client_secret: str | None = Field(
        None, description="The client's secret, as env:NAME (None: a public client)."
    )
    id_prefix: str = Field(
        "", description="Prefixed to the subject to name the principal (as auth.jwt[].id_prefix)."
    )
    scopes: list[str] = Field(default_factory=lambda: ["openid"])
    session_key: str | None = Field(
        None,
        description=(
            "The secret the browser sessions are signed with, as env:NAME (at least 32 "
            "characters; every replica must have the same). Absent: derived from the vault's "
            "current key (rotating the vault key signs browsers out)."
        ),
    )
    tenant_claim: str | None = Field(
        None,
        description=(
            "The ID token's claim naming the user's tenant (as auth.jwt[].tenant_claim): the "
            "signed-in principal is then that tenant's. Absent: no tenant."
        ),
    )


class ConnectConfig(Strict):
    """Connect links and held connect calls."""

    link_ttl: float = Field(
        600.0, gt=0, le=86400, description="Seconds a connect link (and its held call) lives."
    )
    hold: float = Field(
        120.0,
        ge=0,
        description=(
            "Seconds a client sent the link by URL-mode elicitation waits for the connection "
            "before it is answered with the link (the call stays held until link_ttl)."
        ),
    )
    signin: SigninConfig | None = Field(
        None, description="Browser sign-in before connecting (absent: the link alone suffices)."
    )
