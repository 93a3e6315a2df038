"""``servers[].credentials.exchange``: how a ``token_exchange`` server's callers are reached as
themselves (RFC 8693). The caller's identity-provider token (the JWT ``auth.jwt`` accepted) is
exchanged at the provider's token endpoint for a token whose audience is the upstream; it is
never forwarded as is."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gateway.config._strict import Strict

__all__ = ["ExchangeClientConfig", "TokenExchangeConfig", "scope_tokens"]

URL = r"^https?://[^\s/?#]+[^\s#]*$"


def scope_tokens(value: list[str]) -> list[str]:
    """``value``, each a scope token (no spaces or quotes), or `ValueError` naming the first
    that is not."""
    for scope in value:
        if not scope or any(c.isspace() or c in '"\\' for c in scope):
            raise ValueError(f"{scope!r} is not a scope (one token, no spaces or quotes)")
    return value


class ExchangeClientConfig(Strict):
    """The gateway's client at the identity provider (``exchange.client``)."""

    id: str = Field(min_length=1, description="The client_id the provider issued the gateway.")
    secret: str = Field(
        pattern=r"^env:[A-Za-z_][A-Za-z0-9_]*$",
        description="env:NAME: the variable holding the client secret.",
    )
    auth_method: Literal["client_secret_basic", "client_secret_post"] = Field(
        "client_secret_basic", description="How the client authenticates at the token endpoint."
    )


class TokenExchangeConfig(Strict):
    """Where and how to exchange a caller's token (``credentials.exchange``)."""

    issuer: str | None = Field(
        None,
        pattern=URL,
        description=(
            "The identity provider's issuer: its token endpoint is read from its discovery "
            "document (OpenID, else RFC 8414). Give this or token_endpoint."
        ),
    )
    token_endpoint: str | None = Field(
        None, pattern=URL, description="The provider's token endpoint (instead of issuer)."
    )
    client: ExchangeClientConfig = Field(description="The gateway's client at the provider.")
    resource: str | None = Field(
        None,
        pattern=URL,
        description="The resource indicator asked for (RFC 8707; default: the server's url).",
    )
    audience: str | None = Field(
        None, min_length=1, description="The audience asked for, where the provider wants one."
    )
    scopes: list[str] = Field(
        default_factory=list,
        description="The scopes asked for (default: the provider's choice).",
    )
    subject_token_type: Literal["access_token", "jwt", "id_token"] = Field(
        "access_token",
        description="What the caller's token is, as RFC 8693 names it (urn:...:token-type:).",
    )
    renew_before: float = Field(
        60.0,
        ge=0,
        description="Seconds before an exchanged token expires that it is exchanged anew.",
    )

    @field_validator("scopes")
    @classmethod
    def _scope_tokens(cls, value: list[str]) -> list[str]:
        return scope_tokens(value)

    @model_validator(mode="after")
    def _one_endpoint(self) -> TokenExchangeConfig:
        if (self.issuer is None) == (self.token_endpoint is None):
            raise ValueError("give exactly one of 'issuer' (discovery) and 'token_endpoint'")
        return self
