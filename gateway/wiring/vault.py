"""The vault chosen by the config: its store beside the others (memory, the SQLite file, or
PostgreSQL) and its keyring from ``vault.key`` and ``vault.previous_keys``; the started
``oauth`` connects, sealed with that keyring, beside its records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.config.model import GatewayConfig
from gateway.credentials.flow_store import FlowStore
from gateway.memory.oauth_flows import MemoryFlowStore
from gateway.memory.vault import MemoryVaultStore
from gateway.sqlite.oauth_flows import SQLiteFlowStore
from gateway.sqlite.vault import SQLiteVaultStore
from gateway.vault import Keyring, Vault, VaultError, VaultStore, read_key
from gateway.vault.vault import Record
from toolsets.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend

__all__ = ["build_vault", "flow_store", "vault_store"]


def vault_store(config: GatewayConfig, shared: PostgresBackend | None) -> VaultStore:
    """Where sealed records live: beside the pending calls."""
    if shared is not None:
        from gateway.postgres.vault import PostgresVaultStore

        return PostgresVaultStore(shared.database)
    if config.approvals.store == "memory":
        return MemoryVaultStore()
    return SQLiteVaultStore(config.resolve(config.approvals.path))


def flow_store(config: GatewayConfig, shared: PostgresBackend | None) -> FlowStore:
    """Where started ``oauth`` connects live: beside the vault's records (shared by the
    replicas on PostgreSQL)."""
    if shared is not None:
        from gateway.postgres.oauth_flows import PostgresFlowStore

        return PostgresFlowStore(shared.database)
    if config.approvals.store == "memory":
        return MemoryFlowStore()
    return SQLiteFlowStore(config.resolve(config.approvals.path))


def _key(ref: str, key: str) -> bytes:
    try:
        return read_key(ref)
    except VaultError as exc:
        raise ConfigError([ConfigIssue("", None, None, key, str(exc))]) from None


def keyring(config: GatewayConfig, current: str | None = None) -> Keyring:
    """The ring of ``vault.key`` (or ``current``, an ``env:NAME``) and the older keys.

    Raises:
        ConfigError: no vault is configured, or a key cannot be read (the value unrepeated).
    """
    if config.vault is None:
        raise ConfigError([ConfigIssue("", None, None, "vault", "no vault.key is configured")])
    older = [
        _key(ref, f"vault.previous_keys[{i}]") for i, ref in enumerate(config.vault.previous_keys)
    ]
    if current is None:
        return Keyring.of(_key(config.vault.key, "vault.key"), *older)
    return Keyring.of(_key(current, "--new-key"), _key(config.vault.key, "vault.key"), *older)


def build_vault(
    config: GatewayConfig, shared: PostgresBackend | None, record: Record
) -> Vault | None:
    """The vault when ``vault`` is configured, else None."""
    if config.vault is None:
        return None
    return Vault(vault_store(config, shared), keyring(config), record)
