"""``servers[].credentials`` and ``vault``: how each caller reaches an upstream as themselves.

``mode: shared`` (the default) is today's one set of ``headers``/``env`` for everyone. ``mode:
secret`` injects a per-principal secret, kept in the encrypted vault, as an HTTP header
(``header``, its ``value`` template) or a stdio server's environment variable (``env``), over one
upstream connection per (server, principal). ``mode: oauth`` has each principal connect their own
account with the MCP authorization flow (scopes, a pre-registered ``client`` or a Client ID
Metadata Document, by default the gateway's own, else dynamic registration); the tokens live in
the vault.
``mode: token_exchange`` exchanges each caller's identity-provider JWT for a token whose audience
is the upstream (RFC 8693; ``exchange``: `TokenExchangeConfig`).
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any, Final, Literal

from pydantic import Field, field_validator

from gateway.config._strict import Strict
from gateway.config.token_exchange import TokenExchangeConfig, scope_tokens

__all__ = [
    "CIMD_OFF",
    "KEY_FORM",
    "NOT_YET",
    "CredentialsConfig",
    "OAuthClientConfig",
    "VaultConfig",
    "vault_key_problem",
]

NOT_YET: Final[frozenset[str]] = frozenset()
CIMD_OFF: Final = "none"
"""``client_metadata_url: none``: no Client ID Metadata Document, not even the gateway's own."""
KEY_FORM: Final = "32 random bytes in base64, e.g. `openssl rand -base64 32`"


class OAuthClientConfig(Strict):
    """A client registered beforehand at the upstream's authorization server
    (``credentials.client``)."""

    id: str = Field(min_length=1, description="The client_id the authorization server issued.")
    secret: str | None = Field(
        None,
        pattern=r"^env:[A-Za-z_][A-Za-z0-9_]*$",
        description="env:NAME: the variable holding the client secret (none: a public client).",
    )
    auth_method: Literal["client_secret_basic", "client_secret_post", "none"] | None = Field(
        None,
        description=(
            "How the client authenticates at the token endpoint (default: client_secret_basic "
            "with a secret, none without)."
        ),
    )


class CredentialsConfig(Strict):
    """How the gateway authenticates to one upstream (``servers[].credentials``)."""

    mode: Literal["shared", "secret", "oauth", "token_exchange"] = Field(
        "shared",
        description=(
            "shared: the server's headers/env for every caller; secret: each principal's own "
            "secret from the vault; oauth: each principal connects their own account (MCP "
            "authorization, tokens in the vault); token_exchange: each caller's JWT exchanged "
            "at the identity provider (RFC 8693); one connection per principal but for shared."
        ),
    )
    scopes: list[str] = Field(
        default_factory=list,
        description=(
            "oauth: the scopes asked for (default: those the upstream's metadata advertises)."
        ),
    )
    client: OAuthClientConfig | None = Field(
        None,
        description="oauth: a pre-registered client (default: dynamic registration, RFC 7591).",
    )
    client_metadata_url: str | None = Field(
        None,
        pattern=r"^(https://[^/?#]+/[^?#]+|none)$",
        description=(
            "oauth: the https URL of a Client ID Metadata Document, used as the gateway's "
            "client_id where the authorization server supports it (tried before dynamic "
            "registration); default: the gateway's own (/oauth/client-metadata.json) under an "
            "https auth.public_url; none: never a document."
        ),
    )
    exchange: TokenExchangeConfig | None = Field(
        None, description="token_exchange: the identity provider and the gateway's client there."
    )
    client_name: str = Field(
        "lockgate", min_length=1, description="oauth: the client name shown on consent pages."
    )
    connect_timeout: float = Field(
        600.0, gt=0, description="oauth: seconds a started connect stays open for its callback."
    )
    header: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9-]{1,64}$",
        description="secret mode, http/sse: the request header carrying the secret.",
    )
    value: str = Field(
        "{secret}",
        description="secret mode, http/sse: the header's value; {secret} is the secret.",
    )
    env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description="secret mode, stdio: the environment variable carrying the secret.",
    )
    idle_timeout: float = Field(
        300.0, gt=0, description="Seconds a principal's unused connection stays open."
    )
    max_connections: int = Field(
        100, gt=0, description="Connections (stdio: processes) open at once to this server."
    )

    @field_validator("scopes")
    @classmethod
    def _scope_tokens(cls, value: list[str]) -> list[str]:
        return scope_tokens(value)

    @field_validator("mode", mode="before")
    @classmethod
    def _not_yet(cls, value: Any) -> Any:
        if value in NOT_YET:
            raise ValueError(
                f"credentials mode {value!r} is not yet supported (available: shared, secret, "
                "oauth, token_exchange)"
            )
        return value

    @field_validator("value")
    @classmethod
    def _has_secret(cls, value: str) -> str:
        if "{secret}" not in value:
            raise ValueError("the value template must contain {secret}")
        return value

    @property
    def per_principal(self) -> bool:
        """Each principal has its own connection (every mode but ``shared``)."""
        return self.mode != "shared"


class VaultConfig(Strict):
    """The encrypted store of per-principal upstream secrets (``vault``)."""

    key: str = Field(
        pattern=r"^env:[A-Za-z_][A-Za-z0-9_]*$",
        description="env:NAME: the variable holding the key (32 bytes, base64).",
    )
    previous_keys: list[str] = Field(
        default_factory=list,
        description="env:NAME of older keys still readable (during a rotation).",
    )

    @field_validator("previous_keys")
    @classmethod
    def _env_refs(cls, value: list[str]) -> list[str]:
        for ref in value:
            if not ref.startswith("env:") or len(ref) < 5:
                raise ValueError(f"{ref!r} is not env:NAME")
        return value


def vault_key_problem(ref: str) -> str | None:
    """Why ``ref`` (``env:NAME``) does not give a vault key, or None (never echoes the value)."""
    name = ref.removeprefix("env:")
    held = os.environ.get(name, "")
    if not held:
        return f"environment variable {name} is not set (it should hold {KEY_FORM})"
    try:
        size = len(base64.b64decode(held, validate=True))
    except (binascii.Error, ValueError):
        return f"environment variable {name} is not base64; it should hold {KEY_FORM}"
    if size != 32:
        return f"environment variable {name} holds {size} bytes; it should hold {KEY_FORM}"
    return None
