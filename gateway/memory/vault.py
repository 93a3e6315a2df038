"""`MemoryVaultStore`: sealed vault records in memory (``approvals.store: memory``)."""

from __future__ import annotations

from gateway.vault.record import SealedRecord

__all__ = ["MemoryVaultStore"]


class MemoryVaultStore:
    """Vault records in a dict: gone when the process ends."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], SealedRecord] = {}

    async def get(self, server: str, principal: str) -> SealedRecord | None:
        return self._records.get((server, principal))

    async def put(self, record: SealedRecord) -> None:
        c = record.connection
        self._records[c.server, c.principal] = record

    async def delete(self, server: str, principal: str) -> bool:
        return self._records.pop((server, principal), None) is not None

    async def all(self, principal: str | None = None) -> list[SealedRecord]:
        return [
            self._records[key]
            for key in sorted(self._records)
            if principal is None or key[1] == principal
        ]

    async def close(self) -> None:
        return None
