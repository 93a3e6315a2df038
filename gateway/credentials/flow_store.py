"""`FlowStore`: where the started ``oauth`` connects live (memory, the SQLite file or
PostgreSQL), sealed; it never sees a PKCE verifier or a state in clear."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["FlowStore", "SealedFlow"]


@dataclass(frozen=True, slots=True)
class SealedFlow:
    """A started connect as stored.

    Attributes:
        key: The SHA-256 (hex) of its state.
        server: The upstream it connects.
        principal: Who started it.
        expires_at: When its link stops working (unix time).
        key_id: The vault key it is sealed with.
        sealed: The flow (verifier, client, metadata, scope), nonce + AES-GCM ciphertext.
    """

    key: str
    server: str
    principal: str
    expires_at: float
    key_id: str
    sealed: bytes


class FlowStore(Protocol):
    """Started connects, one per state."""

    async def put(self, flow: SealedFlow, *, forget_before: float) -> None:
        """Keep ``flow``; forget the flows that expired before ``forget_before``."""
        ...

    async def server_of(self, key: str) -> str | None:
        """The server of the flow ``key``, or None when there is none."""
        ...

    async def take(self, key: str, server: str) -> SealedFlow | None:
        """The flow ``key`` of ``server``, removed in the same step: of callers racing for it,
        on any replica, one gets it; None for the others."""
        ...
