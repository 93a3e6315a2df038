"""`MemoryGrantStore`: grants in memory, beside the memory pending store (lost with the process)."""

from __future__ import annotations

import builtins

from gateway.approvals.errors import GrantNotFound
from gateway.approvals.grants import Grant, Match

__all__ = ["MemoryGrantStore"]


class MemoryGrantStore:
    """Implements `gateway.approvals.grant_store.GrantStore` in a dict; each method is atomic on
    the event loop."""

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
