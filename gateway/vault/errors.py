"""The vault's errors: each names the record or key, never a secret."""

from __future__ import annotations

from toolsets.errors import LockgateError

__all__ = ["VaultError", "VaultKeyMissing"]


class VaultError(LockgateError):
    """The vault cannot do what was asked (its store is unreadable, a record is damaged)."""


class VaultKeyMissing(VaultError):
    """A record was sealed with a key this gateway does not hold."""

    def __init__(self, key_id: str, connection_id: str) -> None:
        super().__init__(
            f"vault record {connection_id} is sealed with key {key_id}, which this gateway does "
            "not hold: set vault.key (or vault.previous_keys) to that key, or run "
            "`lockgate vault rotate` with it"
        )
        self.key_id = key_id
