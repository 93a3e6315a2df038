"""`check_credentials`: the checks of ``servers[].credentials`` and ``vault`` that span keys
(a secret mode needs its header or variable for its transport, and a readable vault key)."""

from __future__ import annotations

import os

from gateway.config.credentials import vault_key_problem
from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig
from policies.yamlfile import Located
from toolsets.errors import ConfigIssue

__all__ = ["check_credentials", "uses_vault"]


def uses_vault(config: GatewayConfig) -> bool:
    """Some enabled server keeps its callers' credentials in the vault."""
    return any(s.credentials.per_principal for s in config.enabled_servers())


def _server_problem(server: ServerConfig) -> tuple[str, str] | None:
    """(key under ``credentials``, problem) of one server's secret mode, or None."""
    credentials = server.credentials
    if not credentials.per_principal:
        return None
    if server.transport in ("python", "script"):
        return "mode", f"a {server.transport} server has no upstream credentials: use shared"
    if credentials.mode == "oauth":
        return _oauth_problem(server)
    if credentials.mode == "token_exchange":
        return _exchange_problem(server)
    if server.transport == "stdio":
        if credentials.env is None:
            return "env", "a stdio server in secret mode needs 'env' (the variable to set)"
        if credentials.header is not None:
            return "header", "a stdio server takes the secret in 'env', not a header"
        return None
    if credentials.header is None:
        return "header", f"an {server.transport} server in secret mode needs 'header'"
    if credentials.env is not None:
        return "env", f"an {server.transport} server takes the secret in 'header', not env"
    return None


def _oauth_problem(server: ServerConfig) -> tuple[str, str] | None:
    """(key, problem) of one server's oauth mode, or None."""
    credentials = server.credentials
    if server.transport == "stdio":
        return "mode", "a stdio server has no OAuth: use secret (env) or shared"
    if (found := _sends_its_token(server, "oauth mode sends the access token")) is not None:
        return found
    client = credentials.client
    if client is not None and client.secret is not None:
        return _secret_unset("client.secret", client.secret)
    return None


def _sends_its_token(server: ServerConfig, says: str) -> tuple[str, str] | None:
    """(key, problem) of a ``header`` or ``env`` set for a mode that sends a token itself."""
    for key in ("header", "env"):
        if getattr(server.credentials, key) is not None:
            return key, f"{says} itself: remove {key!r}"
    return None


def _secret_unset(key: str, ref: str) -> tuple[str, str] | None:
    """(key, problem) when the variable of a client secret (``env:NAME``) is not set."""
    name = ref.removeprefix("env:")
    if os.environ.get(name):
        return None
    return key, f"environment variable {name} (the client secret) is not set"


def _exchange_problem(server: ServerConfig) -> tuple[str, str] | None:
    """(key, problem) of one server's token_exchange mode, or None."""
    credentials = server.credentials
    if server.transport == "stdio":
        return "mode", "a stdio server takes no bearer token: use secret (env) or shared"
    if credentials.exchange is None:
        return "exchange", "token_exchange mode needs 'exchange' (issuer or token_endpoint, client)"
    if (found := _sends_its_token(server, "token_exchange sends the exchanged token")) is not None:
        return found
    return _secret_unset("exchange.client.secret", credentials.exchange.client.secret)


def check_credentials(config: GatewayConfig, located: Located) -> list[ConfigIssue]:
    """Every problem of the credentials and vault sections, each at its key."""
    issues: list[ConfigIssue] = []
    for index, server in enumerate(config.servers):
        if (found := _server_problem(server)) is not None:
            key, problem = found
            at: tuple[int | str, ...] = ("servers", index, "credentials", *key.split("."))
            issues.append(located.issue(at, problem))
    vault = config.vault
    if vault is None:
        if uses_vault(config):
            needed = (
                "a server with per-caller credentials needs vault.key (env:NAME, 32 bytes base64)"
            )
            issues.append(located.issue(("vault",), needed))
        return issues
    if (bad := vault_key_problem(vault.key)) is not None:
        issues.append(located.issue(("vault", "key"), bad))
    for i, ref in enumerate(vault.previous_keys):
        if (bad := vault_key_problem(ref)) is not None:
            issues.append(located.issue(("vault", "previous_keys", i), bad))
    return issues
