"""`SealedRecord` (a row as stored) and `Connection` (what anyone may be shown of it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolsets.upstream.per_principal import TENANT_SEPARATOR

__all__ = ["Connection", "SealedRecord"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """A principal's registered credential for one server, without the credential.

    Attributes:
        id: The connection id (random; names the record in messages and events).
        server: The upstream server's name.
        principal: Whose it is: the principal's id, qualified with its tenant when it has one
            (`toolsets.upstream.per_principal.principal_key`).
        created_at: When it was first set (unix time).
        updated_at: When it was last set.
    """

    id: str
    server: str
    principal: str
    created_at: float
    updated_at: float

    def to_json(self) -> dict[str, Any]:
        """What a page or API shows: the principal's id and its tenant apart (never the key)."""
        tenant, _, principal = self.principal.rpartition(TENANT_SEPARATOR)
        return {
            "id": self.id,
            "server": self.server,
            "principal": principal,
            "tenant": tenant or None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SealedRecord:
    """One vault row: the connection and its sealed secret (``key_id``: the key that opens it).

    Its ``repr`` leaves out the ciphertext (it is not secret, but it is noise in a log)."""

    connection: Connection
    key_id: str
    sealed: bytes

    def __repr__(self) -> str:
        return f"SealedRecord({self.connection!r}, key_id={self.key_id!r})"
