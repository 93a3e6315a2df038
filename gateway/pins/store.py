"""`PinStore`: where tool pins are kept, beside the pending calls, in the same backend.

Backends: `gateway.memory.pins.MemoryPinStore` (pins last as long as the process),
`gateway.sqlite.pins.SQLitePinStore` (the pending store's SQLite file) and
`gateway.postgres.pins.PostgresPinStore`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import anyio

from gateway.pins.record import PinRecord

__all__ = ["PinStore"]


class PinStore(ABC):
    """Loads every pin once and writes each change through; a store other processes share
    also tells when they may have written (`changed`)."""

    @abstractmethod
    async def load(self) -> list[PinRecord]:
        """Every pin on record."""

    @abstractmethod
    async def save(self, record: PinRecord) -> None:
        """Insert or replace the pin of ``record.key``; durable when it returns."""

    async def changed(self) -> None:
        """Return when another process may have changed the pins (the first call returns at
        once); never, for a store nobody shares or whose changes arrive as events."""
        await anyio.sleep_forever()

    @abstractmethod
    async def close(self) -> None:
        """Release the backend."""
