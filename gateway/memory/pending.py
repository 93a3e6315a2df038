"""`MemoryPendingStore`: an in-process, non-durable store for tests and ephemeral gateways."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable

from gateway.approvals._query import Query
from gateway.approvals._transitions import Plan, Step
from gateway.approvals.errors import PendingNotFound
from gateway.approvals.pending import PendingCall
from gateway.approvals.records import PendingRecords
from gateway.approvals.store import PendingListener, PendingStore

__all__ = ["MemoryPendingRecords", "MemoryPendingStore"]


class MemoryPendingRecords(PendingRecords):
    """Pending calls in a dict; lost when the process exits.

    Each method runs without awaiting, so it is atomic on the event loop; use the records from
    one event loop only.
    """

    def __init__(self) -> None:
        self._calls: dict[str, PendingCall] = {}
        self._seq: dict[str, int] = {}
        self._nonces: dict[str, float] = {}

    async def insert(self, call: PendingCall) -> None:
        if call.id in self._calls:
            raise ValueError(f"Pending call {call.id!r} already exists")
        self._calls[call.id] = call
        self._seq[call.id] = len(self._seq)

    async def load(self, id: str) -> PendingCall | None:
        return self._calls.get(id)

    async def query(self, query: Query) -> builtins.list[PendingCall]:
        found = [call for call in self._calls.values() if query.matches(call)]
        found.sort(key=lambda call: (call.created_at, self._seq[call.id]), reverse=True)
        return found if query.limit is None else found[: query.limit]

    async def update(self, id: str, plan: Plan) -> Step:
        current = self._calls.get(id)
        if current is None:
            raise PendingNotFound(id)
        step = plan(current)
        if step.changed:
            self._calls[id] = step.call
        return step

    async def consume_nonce(self, nonce: str, *, expires_at: float, now: float) -> bool:
        for stale in [n for n, exp in self._nonces.items() if exp < now]:
            del self._nonces[stale]
        if nonce in self._nonces:
            return False
        self._nonces[nonce] = expires_at
        return True

    async def close(self) -> None:
        """Nothing to release."""


class MemoryPendingStore(PendingStore):
    """A `PendingStore` over `MemoryPendingRecords`.

    Args:
        listener: See `PendingStore`.
        clock: See `PendingStore`.
        poll_interval: See `PendingStore`.
    """

    def __init__(
        self,
        *,
        listener: PendingListener | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.5,
    ) -> None:
        super().__init__(
            MemoryPendingRecords(), listener=listener, clock=clock, poll_interval=poll_interval
        )
