"""`MemorySessionStore`: session states in memory, beside the memory pending store (lost with the
process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.sessions.store import SessionStore

__all__ = ["MemorySessionStore"]


class MemorySessionStore(SessionStore):
    """States in memory (lost with the process)."""

    def __init__(self) -> None:
        self._states: dict[str, dict[str, Any]] = {}

    async def load(self, key: str) -> dict[str, Any] | None:
        return self._states.get(key)

    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        self._states.update({key: dict(state) for key, state in states.items()})

    async def close(self) -> None:
        return None
