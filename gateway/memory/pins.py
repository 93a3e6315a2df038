"""`MemoryPinStore`: tool pins in memory, beside the memory pending store (lost with the
process)."""

from __future__ import annotations

from gateway.pins.record import PinRecord
from gateway.pins.store import PinStore

__all__ = ["MemoryPinStore"]


class MemoryPinStore(PinStore):
    """Pins in memory (lost with the process)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], PinRecord] = {}

    async def load(self) -> list[PinRecord]:
        return list(self._records.values())

    async def save(self, record: PinRecord) -> None:
        self._records[record.key] = record

    async def close(self) -> None:
        return None
