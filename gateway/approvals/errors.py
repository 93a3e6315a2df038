"""Errors of the pending-call store and the sealed request state, all under `LockgateError`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolsets.errors import ApprovalConflict, LockgateError

if TYPE_CHECKING:
    from gateway.approvals.pending import PendingCall

__all__ = ["PendingConflict", "PendingNotFound", "PendingStoreError", "SealedStateError"]


class PendingNotFound(LockgateError):
    """No pending call has that id.

    Attributes:
        id: The id that was looked up.
    """

    def __init__(self, id: str) -> None:
        self.id = id
        super().__init__(f"No pending call {id!r}")


class PendingConflict(ApprovalConflict):
    """A transition lost its compare-and-set: the call is not in a state that allows it.

    Attributes:
        call: The record as stored when the transition was refused (its ``state`` is current).
    """

    def __init__(self, call: PendingCall, action: str) -> None:
        self.call = call
        super().__init__(f"Pending call {call.id!r} is {call.state!r}; cannot {action}")


class PendingStoreError(LockgateError):
    """The pending-call store cannot be opened or used (corrupt file, newer schema, closed)."""


class SealedStateError(LockgateError):
    """A sealed ``request_state`` was refused.

    Attributes:
        reason: ``malformed``, ``principal``, ``expired`` or ``replayed``; for logs only.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"Invalid or expired request state ({reason})")
