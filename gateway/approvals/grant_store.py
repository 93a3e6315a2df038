"""`GrantStore`: where grants live, beside the pending calls, in the same backend.

Every backend (`gateway.memory.grants`, `gateway.sqlite.grants`, `gateway.postgres.grants`)
implements the same small protocol. Revoking is a compare-and-set: of two revokers, one wins and
the other gets `GrantConflict`.
"""

from __future__ import annotations

import builtins
from typing import Protocol

from gateway.approvals.grants import Grant, Match

__all__ = ["GrantStore"]


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
