"""`MemoryFlowStore`: started ``oauth`` connects in memory (``approvals.store: memory``)."""

from __future__ import annotations

from gateway.credentials.flow_store import SealedFlow

__all__ = ["MemoryFlowStore"]


class MemoryFlowStore:
    """Started connects in a dict: gone when the process ends."""

    def __init__(self) -> None:
        self._flows: dict[str, SealedFlow] = {}

    async def put(self, flow: SealedFlow, *, forget_before: float) -> None:
        self._flows = {k: f for k, f in self._flows.items() if f.expires_at >= forget_before}
        self._flows[flow.key] = flow

    async def server_of(self, key: str) -> str | None:
        found = self._flows.get(key)
        return None if found is None else found.server

    async def take(self, key: str, server: str) -> SealedFlow | None:
        found = self._flows.get(key)
        if found is None or found.server != server:
            return None
        return self._flows.pop(key)
