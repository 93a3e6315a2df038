"""`SessionStore`: where per-session state is kept, beside the pending calls, in the same backend.

A state is one JSON text (`policies.session.SessionState.to_json`). Backends:
`gateway.memory.sessions.MemorySessionStore`, `gateway.sqlite.sessions.SQLiteSessionStore` (the
pending store's SQLite file, so a session's history survives a restart) and
`gateway.postgres.sessions.PostgresSessionStore`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

__all__ = ["SessionStore"]


class SessionStore(ABC):
    """Session states by key (``principal:session``)."""

    @abstractmethod
    async def load(self, key: str) -> dict[str, Any] | None:
        """The state saved for ``key``, if any."""

    @abstractmethod
    async def save_many(self, states: Mapping[str, Mapping[str, Any]]) -> None:
        """Insert or replace these states, in one transaction; durable when it returns."""

    async def recent(
        self, tenant: str | None, limit: int
    ) -> list[tuple[str, dict[str, Any]]] | None:
        """The most recently saved states of ``tenant`` (key and state, newest first), where
        several replicas share the store; None where one process's book is the whole answer."""
        return None

    @abstractmethod
    async def close(self) -> None:
        """Release the backend."""
