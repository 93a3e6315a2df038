"""A pending call as a database row, the same for every SQL store (SQLite, PostgreSQL): the full
record is one JSON document, and the columns queries filter on are copies of its fields."""

from __future__ import annotations

import json
from typing import Any

from gateway.approvals.errors import PendingStoreError
from gateway.approvals.pending import PendingCall
from toolsets.canonical import canonical_json

__all__ = ["decode_record", "record_of", "row_of"]


def record_of(call: PendingCall) -> str:
    """``call``'s record: its canonical JSON."""
    return canonical_json(call.to_json()).decode()


def row_of(call: PendingCall, delivered: Any) -> tuple[Any, ...]:
    """The values of an ``INSERT`` (``delivered`` as the database stores a boolean)."""
    return (
        *(call.id, call.kind, call.state, call.principal, call.session_id, call.tool),
        *(call.args_sha256, delivered, call.created_at, call.expires_at),
        *(call.updated_at, record_of(call)),
    )


def decode_record(record: str) -> PendingCall:
    """The call a stored record holds.

    Raises:
        PendingStoreError: The record is not a pending call's.
    """
    try:
        return PendingCall.from_json(json.loads(record))
    except (ValueError, TypeError) as exc:
        raise PendingStoreError(f"Corrupt pending-call record: {exc}") from exc
