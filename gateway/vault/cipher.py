"""`Keyring`: AES-256-GCM sealing of vault secrets under named keys.

A key's id is the start of the SHA-256 of the key itself, stored with each record, so a record
names the key that opens it and a rotation can tell old records from new. The associated data
binds a sealed secret to its (server, principal): a row copied onto another principal's does not
open.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from gateway.vault.errors import VaultError, VaultKeyMissing

__all__ = ["Keyring", "key_id", "read_key"]

NONCE_BYTES = 12


def key_id(key: bytes) -> str:
    """The id a record stores for ``key`` (not secret: a hash prefix)."""
    return hashlib.sha256(b"lockgate-vault:" + key).hexdigest()[:16]


def read_key(ref: str) -> bytes:
    """The 32-byte key named by ``ref`` (``env:NAME`` holding base64).

    Raises:
        VaultError: the variable is unset or does not hold 32 bytes of base64 (the value is
            never repeated).
    """
    name = ref.removeprefix("env:")
    try:
        key = base64.b64decode(os.environ.get(name, ""), validate=True)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise VaultError(f"environment variable {name} must hold a 32-byte key in base64")
    return key


def _aad(server: str, principal: str) -> bytes:
    return f"lockgate-vault\0{server}\0{principal}".encode()


class Keyring:
    """The current key (which seals) and older ones (which still open)."""

    def __init__(self, current: bytes, older: Mapping[str, bytes] | None = None) -> None:
        self.current_id = key_id(current)
        self._keys = {**(older or {}), self.current_id: current}

    @classmethod
    def of(cls, current: bytes, *older: bytes) -> Keyring:
        return cls(current, {key_id(k): k for k in older})

    def derived(self, purpose: bytes) -> bytes:
        """A key for ``purpose`` derived from the current key (HMAC-SHA256; never the key)."""
        return hmac.new(self._keys[self.current_id], purpose, hashlib.sha256).digest()

    def seal(self, secret: str, *, server: str, principal: str) -> tuple[str, bytes]:
        """(key id, nonce + ciphertext) of ``secret`` for (``server``, ``principal``)."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(self._keys[self.current_id]).encrypt(
            nonce, secret.encode(), _aad(server, principal)
        )
        return self.current_id, nonce + sealed

    def open(
        self, key: str, blob: bytes, *, server: str, principal: str, connection_id: str
    ) -> str:
        """The secret sealed in ``blob`` under key ``key``.

        Raises:
            VaultKeyMissing: this ring does not hold that key.
            VaultError: the record does not open (damaged, or moved to another principal).
        """
        found = self._keys.get(key)
        if found is None:
            raise VaultKeyMissing(key, connection_id)
        try:
            plain = AESGCM(found).decrypt(
                blob[:NONCE_BYTES], blob[NONCE_BYTES:], _aad(server, principal)
            )
        except InvalidTag:
            raise VaultError(
                f"vault record {connection_id} does not open with key {key}: it was damaged or "
                "moved; revoke it and set the secret again"
            ) from None
        return plain.decode()
