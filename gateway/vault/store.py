"""`VaultStore`: where sealed records live (SQLite, PostgreSQL or memory); it never sees a
secret in clear."""

from __future__ import annotations

from typing import Protocol

from gateway.vault.record import SealedRecord

__all__ = ["VaultStore"]


class VaultStore(Protocol):
    """Sealed records, one per (server, principal)."""

    async def get(self, server: str, principal: str) -> SealedRecord | None:
        """The record of ``principal`` for ``server``, or None."""
        ...

    async def put(self, record: SealedRecord) -> None:
        """Insert or replace the record of its (server, principal)."""
        ...

    async def delete(self, server: str, principal: str) -> bool:
        """Remove it; True when there was one."""
        ...

    async def all(self, principal: str | None = None) -> list[SealedRecord]:
        """Every record (of ``principal`` only, when given), by server then principal."""
        ...

    async def close(self) -> None: ...
