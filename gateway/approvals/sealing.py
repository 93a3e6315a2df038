"""Sealed ``request_state`` for 2026-07-28 `InputRequiredResult`: opaque, principal-bound, expiring,
single-use tokens that point a client's retry back at its pending call."""

from __future__ import annotations

import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from gateway.approvals.errors import SealedStateError

__all__ = ["NonceLedger", "RequestStatePayload", "RequestStateSealer"]

_PURPOSE: Final = "lockgate/pending-call/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestStatePayload:
    """What a sealed request state carries.

    Attributes:
        pending_id: The pending call the client is answering.
        principal: The principal the state was issued to.
        expires_at: Unix seconds after which the state is refused.
        nonce: Random single-use marker; consumed through a `NonceLedger`.
    """

    pending_id: str
    principal: str
    expires_at: float
    nonce: str


class NonceLedger(Protocol):
    """Remembers consumed nonces; every `gateway.approvals.store.PendingStore` is one."""

    async def consume_nonce(self, nonce: str, *, expires_at: float) -> bool: ...


def _decode(raw: bytes) -> RequestStatePayload:
    try:
        data: Any = json.loads(raw)
        if data["purpose"] != _PURPOSE:
            raise ValueError("another purpose")
        payload = RequestStatePayload(
            pending_id=data["pending_id"],
            principal=data["principal"],
            expires_at=data["exp"],
            nonce=data["nonce"],
        )
    except (ValueError, KeyError, TypeError):
        raise SealedStateError("malformed") from None
    if not all(isinstance(v, str) for v in (payload.pending_id, payload.principal, payload.nonce)):
        raise SealedStateError("malformed")
    if not isinstance(payload.expires_at, int | float):
        raise SealedStateError("malformed")
    return payload


class RequestStateSealer:
    """Seals and opens ``request_state`` tokens with AES-256-GCM.

    Encryption and integrity come from the MCP SDK's `AESGCMRequestStateCodec` (HKDF-derived
    key, versioned token, authenticated); this class adds what the gateway binds: the pending
    call, the principal, an expiry and a single-use nonce.

    Without a configured key, each process draws a random one: a restart then invalidates the
    states handed out before it, and the client simply gets a fresh prompt for the same
    pending call. Replicas that share pending calls must share a key.

    Args:
        key: At least 32 bytes of secret randomness, or None for a per-process random key.

    Raises:
        ValueError: ``key`` is shorter than 32 bytes.
    """

    def __init__(self, key: bytes | None = None) -> None:
        self._codec = AESGCMRequestStateCodec([secrets.token_bytes(32) if key is None else key])

    def seal(self, *, pending_id: str, principal: str, expires_at: float) -> str:
        """An opaque URL-safe token for ``pending_id``, for ``principal``, until ``expires_at``."""
        payload = {
            "purpose": _PURPOSE,
            "pending_id": pending_id,
            "principal": principal,
            "exp": expires_at,
            "nonce": secrets.token_urlsafe(16),
        }
        return self._codec.seal(json.dumps(payload, separators=(",", ":")).encode())

    def unseal(self, token: str, principal: str, now: float | None = None) -> RequestStatePayload:
        """Open a token and check it; does not consume its nonce (see `redeem`).

        Args:
            token: The ``request_state`` the client echoed.
            principal: The principal making the retry.
            now: The current time in unix seconds (default: now).

        Raises:
            SealedStateError: The token is garbage or tampered with (``malformed``), was issued
                to another principal (``principal``), or has expired (``expired``).
        """
        try:
            payload = _decode(self._codec.unseal(token))
        except InvalidRequestState:
            raise SealedStateError("malformed") from None
        if not hmac.compare_digest(
            payload.principal.encode("utf-8", "surrogatepass"),
            principal.encode("utf-8", "surrogatepass"),
        ):
            raise SealedStateError("principal")
        if not (time.time() if now is None else now) < payload.expires_at:
            raise SealedStateError("expired")
        return payload

    async def redeem(
        self, token: str, *, principal: str, nonces: NonceLedger, now: float | None = None
    ) -> RequestStatePayload:
        """`unseal` the token, then consume its nonce so it cannot be used again.

        Raises:
            SealedStateError: As `unseal`, or ``replayed`` when the nonce was already consumed.
        """
        payload = self.unseal(token, principal=principal, now=now)
        if not await nonces.consume_nonce(payload.nonce, expires_at=payload.expires_at):
            raise SealedStateError("replayed")
        return payload
