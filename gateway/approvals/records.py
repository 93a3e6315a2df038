"""`PendingRecords`: what a backend of the pending store does (read, query, compare-and-set write,
single-use nonces); the rules the records follow live in `gateway.approvals.store`.

Backends: `gateway.memory.pending`, `gateway.sqlite.pending` and `gateway.postgres.pending`.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod

from gateway.approvals._query import Query
from gateway.approvals._transitions import Plan, Step
from gateway.approvals.pending import PendingCall

__all__ = ["PendingRecords"]


class PendingRecords(ABC):
    """The stored records of pending calls, one per id; every method is atomic."""

    @abstractmethod
    async def insert(self, call: PendingCall) -> None:
        """Store a new record durably.

        Raises:
            ValueError: Its id exists.
        """

    @abstractmethod
    async def load(self, id: str) -> PendingCall | None:
        """The stored record, or None."""

    @abstractmethod
    async def query(self, query: Query) -> builtins.list[PendingCall]:
        """Records matching ``query``, newest first."""

    @abstractmethod
    async def update(self, id: str, plan: Plan) -> Step:
        """Atomically load the record, apply ``plan``, durably write ``step.call`` if changed.

        Raises:
            PendingNotFound: No record has that id.
        """

    async def orphans(self) -> builtins.list[PendingCall]:
        """The ``executing`` calls nobody runs any more (recovery fails them): here, all of
        them; records shared by live replicas leave out those a live replica runs."""
        return await self.query(Query(states=frozenset({"executing"})))

    @abstractmethod
    async def consume_nonce(self, nonce: str, *, expires_at: float, now: float) -> bool:
        """Atomically mark a single-use nonce used, forgetting those expired by ``now``.

        Returns:
            True the first time a nonce is consumed, False on every replay.
        """

    @abstractmethod
    async def close(self) -> None:
        """Release the backend's resources."""
