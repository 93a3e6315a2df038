"""The vault: per-principal upstream secrets, sealed with AES-GCM at rest (see
docs/credentials.md)."""

from gateway.vault.cipher import Keyring, key_id, read_key
from gateway.vault.errors import VaultError, VaultKeyMissing
from gateway.vault.record import Connection, SealedRecord
from gateway.vault.store import VaultStore
from gateway.vault.vault import Vault

__all__ = [
    "Connection",
    "Keyring",
    "SealedRecord",
    "Vault",
    "VaultError",
    "VaultKeyMissing",
    "VaultStore",
    "key_id",
    "read_key",
]
