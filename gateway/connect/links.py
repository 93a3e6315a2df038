"""`ConnectLinks`: the single-use link at which a user connects a server for a held call.

A link is ``{base}/connect/{token}``: the token is sealed (AES-256-GCM, from the MCP SDK's
request-state codec) over the held record's id, its principal and server, an expiry and a
random nonce, so it cannot be forged, read or extended. It is spent once: the nonce is
consumed (in the pending store, shared by replicas) when the connection is made through it, and
a link whose record is no longer waiting opens nothing.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from toolsets.errors import LockgateError

__all__ = ["ConnectLinks", "LinkPayload", "LinkRefused", "NonceLedger"]

_PURPOSE: Final = "lockgate/connect-link/v1"


class LinkRefused(LockgateError):
    """A connect link that does nothing: garbage, expired, spent, or opened by someone else.

    Attributes:
        reason: ``malformed``, ``expired``, ``used`` or ``principal``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkPayload:
    """What a sealed link carries."""

    pending_id: str
    principal: str
    server: str
    expires_at: float
    nonce: str


class NonceLedger(Protocol):
    """Remembers spent nonces (`gateway.approvals.store.PendingStore` is one)."""

    async def consume_nonce(self, nonce: str, *, expires_at: float) -> bool: ...


_FIELDS: Final = ("pending_id", "principal", "server", "nonce")


def _decode(raw: bytes) -> LinkPayload:
    try:
        data: Any = json.loads(raw)
        if data.get("purpose") != _PURPOSE or not isinstance(data.get("exp"), int | float):
            raise ValueError("another purpose")
        if not all(isinstance(data.get(name), str) for name in _FIELDS):
            raise ValueError("malformed")
        return LinkPayload(
            pending_id=data["pending_id"],
            principal=data["principal"],
            server=data["server"],
            expires_at=float(data["exp"]),
            nonce=data["nonce"],
        )
    except (ValueError, AttributeError, TypeError):
        raise LinkRefused("malformed", "this connect link is not valid") from None


class ConnectLinks:
    """Seals, opens and spends connect links.

    Args:
        base_url: The gateway's URL as browsers reach it (no trailing slash).
        key: At least 32 bytes of secret (replicas must share it; a restart keeps links
            valid), or None for a per-process random key.
    """

    def __init__(self, base_url: str, key: bytes | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self._codec = AESGCMRequestStateCodec([secrets.token_bytes(32) if key is None else key])

    def link(self, *, pending_id: str, principal: str, server: str, expires_at: float) -> str:
        """The URL of a new link to connect ``server`` for the held record ``pending_id``."""
        payload = {
            "purpose": _PURPOSE,
            "pending_id": pending_id,
            "principal": principal,
            "server": server,
            "exp": expires_at,
            "nonce": secrets.token_urlsafe(16),
        }
        token = self._codec.seal(json.dumps(payload, separators=(",", ":")).encode())
        return f"{self.base_url}/connect/{token}"

    def open(self, token: str, *, now: float | None = None) -> LinkPayload:
        """The payload of a link, checked for integrity and expiry (not spent: see `spend`).

        Raises:
            LinkRefused: ``malformed`` or ``expired``.
        """
        try:
            payload = _decode(self._codec.unseal(token))
        except InvalidRequestState:
            raise LinkRefused("malformed", "this connect link is not valid") from None
        if not (time.time() if now is None else now) < payload.expires_at:
            raise LinkRefused(
                "expired",
                f"this link to connect {payload.server!r} has expired: call the tool again "
                "for a new one",
            )
        return payload

    async def spend(self, payload: LinkPayload, nonces: NonceLedger) -> None:
        """Mark the link used; only the first use succeeds.

        Raises:
            LinkRefused: ``used``: it was used before.
        """
        if not await nonces.consume_nonce(payload.nonce, expires_at=payload.expires_at):
            raise used(payload.server)


def used(server: str) -> LinkRefused:
    """The refusal of a link used before."""
    return LinkRefused(
        "used",
        f"this link to connect {server!r} was used already: call the tool again for a new one",
    )
