"""`RecentReads`: what the vault opened in the last moment, so that a caller's calls one after
the other do not each read the store and open the sealed record again.

An entry lives `FRESH_FOR` seconds: a secret set or revoked by this process is seen at once
(the vault forgets the entry as it writes), one set or revoked by another replica or process
within that time. Only found secrets are kept: a caller who has just connected elsewhere is
never told they have none.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from gateway.vault.record import Connection

__all__ = ["FRESH_FOR", "RecentReads"]

FRESH_FOR: Final = 1.0
"""Seconds an opened secret is used again before the store is read anew."""
MAX_ENTRIES: Final = 10_000
"""Entries kept at most (all are dropped when full: each costs one store read to get back)."""

Key = tuple[str, str]


class RecentReads:
    """Opened secrets by (server, principal), each for `FRESH_FOR` seconds."""

    def __init__(
        self, fresh_for: float = FRESH_FOR, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.fresh_for, self.clock = fresh_for, clock
        self._entries: dict[Key, tuple[float, Connection, str]] = {}

    def get(self, server: str, principal: str) -> tuple[Connection, str] | None:
        """The connection and secret opened less than `fresh_for` seconds ago, or None."""
        found = self._entries.get((server, principal))
        if found is None:
            return None
        until, connection, secret = found
        if self.clock() >= until:
            del self._entries[(server, principal)]
            return None
        return connection, secret

    def keep(self, connection: Connection, secret: str) -> None:
        """Remember what was just opened for ``connection``."""
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        key = (connection.server, connection.principal)
        self._entries[key] = (self.clock() + self.fresh_for, connection, secret)

    def forget(self, server: str, principal: str) -> None:
        """Drop the entry of (server, principal): it is being written."""
        self._entries.pop((server, principal), None)

    def clear(self) -> None:
        self._entries.clear()
