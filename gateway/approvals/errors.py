"""Errors of the approvals concern (pending calls, decisions, grants, the sealed request state),
all under `LockgateError`, and the two signals a held call sends its MCP face."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolsets.errors import ApprovalConflict, LockgateError

if TYPE_CHECKING:
    from gateway.approvals.grants import Grant
    from gateway.approvals.pending import PendingCall
    from toolsets.tooldef import ToolDef

__all__ = [
    "BackChannelRequired",
    "DecisionInvalid",
    "DecisionRefused",
    "GrantConflict",
    "GrantNotFound",
    "InputRequired",
    "InvalidHumanResponse",
    "NotAnApprover",
    "PendingConflict",
    "PendingNotFound",
    "PendingStoreError",
    "SealedStateError",
    "TooManyPending",
]


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


class DecisionRefused(LockgateError):
    """A decision the rule does not offer, or an edit the schema or the policy refuses."""


class NotAnApprover(DecisionRefused):
    """The principal may not decide this call."""


class InvalidHumanResponse(LockgateError, ValueError):
    """A resume value that is no known response, or a response type the reviewer may not give."""


class TooManyPending(LockgateError):
    """The caller already has as many calls waiting as it may."""


class DecisionInvalid(LockgateError):
    """A decision asks for what the held call's rule does not offer, or lacks what it needs:
    a grant scope the rule does not list, a grant longer than ``grant_max``, break-glass
    without a reason. Nothing was changed."""


class GrantNotFound(LockgateError):
    """No grant has that id (or the asker may not see it).

    Attributes:
        id: The id that was looked up.
    """

    def __init__(self, id: str) -> None:
        self.id = id
        super().__init__(f"No grant {id!r}")


class GrantConflict(ApprovalConflict):
    """A grant cannot be revoked: it was revoked already, or it expired.

    Attributes:
        grant: The grant as stored.
    """

    def __init__(self, grant: Grant, why: str) -> None:
        self.grant = grant
        super().__init__(f"Grant {grant.id!r} {why}; nothing to revoke")


class InputRequired(Exception):
    """A 2026-07-28 caller must answer an approval question: the MCP face answers the request
    with an ``InputRequiredResult`` and the client re-issues the call with its answer."""

    def __init__(self, call: PendingCall, tool: ToolDef) -> None:
        super().__init__(call.id)
        self.call = call
        self.tool = tool


class BackChannelRequired(Exception):
    """The call would ask a 2025-11-25 caller over its session's back-channel, which the face
    serving the request does not carry; raised before anything happened, so the request can
    be served again by a face that does."""
