"""`GrantStore`: where grants live, beside the pending calls; and `MemoryGrantStore`.

Every backend (memory, SQLite in `gateway.sqlite.grants`, PostgreSQL) implements the
same small protocol. Revoking is a compare-and-set: of two revokers, one wins and the other
gets `GrantConflict`.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from gateway.approvals.errors import GrantNotFound
from gateway.approvals.grants import Grant, Match

__all__ = ["GrantStore", "MemoryGrantStore"]


class GrantStore(Protocol):
    """Durable grants (the approval service's `gateway.approvals.granting.Grants` uses it)."""

    async def add(self, grant: Grant) -> None:
        """Store a new grant; durable when this returns.

        Raises:
            ValueError: its id is taken.
        """
        ...

    async def get(self, id: str) -> Grant | None:
        """The grant with that id, or None."""
        ...

    async def find_matching(self, match: Match) -> Grant | None:
        """The oldest grant that covers ``match`` (see `Grant.covers`), or None."""
        ...

    async def list(
        self, *, tenant: str | None, active_at: float | None, limit: int = 1000
    ) -> builtins.list[Grant]:
        """Grants of ``tenant``, newest first; with ``active_at``, only those active then."""
        ...

    async def revoke(self, id: str, *, by: str, at: float) -> Grant:
        """Revoke the grant ``id`` if it is active at ``at`` (compare-and-set).

        Raises:
            GrantNotFound: no grant has that id.
            GrantConflict: it was revoked already, or it expired.
        """
        ...

    async def close(self) -> None:
        """Release the backend."""
        ...


class MemoryGrantStore:
    """Grants in a dict, lost with the process; each method is atomic on the event loop."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}

    async def add(self, grant: Grant) -> None:
        if grant.id in self._grants:
            raise ValueError(f"Grant {grant.id!r} already exists")
        self._grants[grant.id] = grant

    async def get(self, id: str) -> Grant | None:
        return self._grants.get(id)

    async def find_matching(self, match: Match) -> Grant | None:
        found = [g for g in self._grants.values() if g.covers(match)]
        return min(found, key=lambda g: g.created_at, default=None)

    async def list(
        self, *, tenant: str | None, active_at: float | None, limit: int = 1000
    ) -> builtins.list[Grant]:
        found = [
            g
            for g in self._grants.values()
            if g.tenant == tenant and (active_at is None or g.active(active_at))
        ]
        found.sort(key=lambda g: g.created_at, reverse=True)
        return found[:limit]

    async def revoke(self, id: str, *, by: str, at: float) -> Grant:
        grant = self._grants.get(id)
        if grant is None:
            raise GrantNotFound(id)
        self._grants[id] = revoked = grant.revoked(by=by, at=at)
        return revoked

    async def close(self) -> None:
        """Nothing to release."""
