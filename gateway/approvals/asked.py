"""`Asked`: one decision as an approver (or the caller) asked for it, and whether the held call
allows it: who may, what the rule offers, one vote per person, break-glass with a reason."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.approvals.access import may_break_glass, may_decide
from gateway.approvals.errors import (
    DecisionInvalid,
    DecisionRefused,
    NotAnApprover,
    PendingConflict,
)
from gateway.approvals.grants import GrantRequest
from gateway.approvals.pending import PendingCall
from gateway.approvals.stages import has_voted
from toolsets.context import Principal

__all__ = ["Asked", "check_asked"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """A decision as asked for.

    Attributes:
        decision: ``approve``, ``deny``, ``edit`` or ``respond``.
        by: Who decides.
        channel: Where it came from (api, cli, web, elicitation, input_required...).
        message: A deny message for the model, or the text of a ``respond``.
        args: The arguments of an ``edit``.
        as_caller: True when the caller itself answers (over its own client).
        grant: A grant to make with the approval (``session`` or ``tool`` scope).
        break_glass: Approve at once, skipping any remaining stages (needs ``reason``).
        reason: Why glass is broken; on record.
    """

    decision: str
    by: Principal
    channel: str
    message: str | None = None
    args: Mapping[str, Any] | None = None
    as_caller: bool = False
    grant: GrantRequest | None = None
    break_glass: bool = False
    reason: str | None = None


def _check_break_glass(call: PendingCall, asked: Asked) -> None:
    if not may_break_glass(call, asked.by):
        raise NotAnApprover(f"{asked.by.id!r} may not break glass on {call.id}")
    if asked.decision != "approve":
        raise DecisionInvalid("break-glass approves: send decision 'approve' with it")
    if not (asked.reason or "").strip():
        raise DecisionInvalid(
            "break-glass needs a reason: say why this cannot wait for the approvers (reason)"
        )
    if asked.grant is not None:
        raise DecisionInvalid("break-glass approves this one call; it makes no grant")


def check_asked(call: PendingCall, asked: Asked) -> None:
    """Refuse, before anything is recorded, a decision ``call`` does not allow.

    Raises:
        DecisionRefused: ``call`` is an external call, or the rule does not offer the decision.
        NotAnApprover: ``asked.by`` may not decide it (for a staged call: not in its current
            stage), or may not break glass on it.
        DecisionInvalid: a grant with anything but ``approve``, or break-glass without a
            reason, not approving, or with a grant.
        PendingConflict: it is decided already, or ``asked.by`` voted on it already.
    """
    if call.kind != "approval":
        raise DecisionRefused(f"{call.id} is an external call; post its result instead")
    if asked.break_glass:
        _check_break_glass(call, asked)
    elif not may_decide(call, asked.by, as_caller=asked.as_caller):
        raise NotAnApprover(f"{asked.by.id!r} may not decide {call.id}")
    if asked.decision not in call.decisions:
        raise DecisionRefused(f"decision {asked.decision!r} is not offered for {call.id}")
    if asked.grant is not None and asked.decision != "approve":
        raise DecisionInvalid(f"a grant comes with 'approve' only, not {asked.decision!r}")
    if call.state != "pending":
        raise PendingConflict(call, f"decide ({asked.decision})")
    voting = call.stages and asked.decision == "approve" and not asked.break_glass
    if voting and has_voted(call, asked.by.id):
        raise PendingConflict(call, f"count a second vote by {asked.by.id}: one vote per person")
