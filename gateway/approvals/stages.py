"""Staged (M-of-N) approvals: the current stage of a held call, and what one more vote does.

Stages are decided in order. A stage is done when ``min`` different people of its approvers
approved; the call is approved when the last stage is done. Who may vote is
`gateway.approvals.access.may_decide`; one principal votes at most once per call.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.approvals.pending import PendingCall, Vote
from toolsets.decision import ApprovalStage

__all__ = ["VoteOutcome", "cast", "current_stage", "has_voted", "stage_votes"]


def current_stage(call: PendingCall) -> ApprovalStage | None:
    """The stage now deciding ``call``; None for a classic call or once every stage is done."""
    return call.stages[call.stage] if call.stage < len(call.stages) else None


def stage_votes(call: PendingCall, stage: int) -> int:
    """How many approving votes stage ``stage`` of ``call`` has."""
    return sum(1 for vote in call.votes if vote.stage == stage)


def has_voted(call: PendingCall, who: str) -> bool:
    """Whether ``who`` (a principal id) voted on ``call``."""
    return any(vote.by == who for vote in call.votes)


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteOutcome:
    """What one more approving vote does to a staged call.

    Attributes:
        vote: The vote to record.
        seen: How many votes the call had when the outcome was worked out (the store refuses
            the vote if others arrived meanwhile, and it is worked out again).
        stage: The call's stage after the vote.
        count: The votes of the voted stage, this one included.
        needed: That stage's ``min``.
        final: True when the vote completes the last stage: the call is approved.
    """

    vote: Vote
    seen: int
    stage: int
    count: int
    needed: int
    final: bool


def cast(call: PendingCall, by: str, *, channel: str, now: float) -> VoteOutcome:
    """The outcome of ``by`` approving ``call`` now (``call`` must have a current stage).

    Raises:
        ValueError: every stage of ``call`` is done (or it has none).
    """
    stage = current_stage(call)
    if stage is None:
        raise ValueError(f"{call.id} has no stage left to vote in")
    count = stage_votes(call, call.stage) + 1
    after = call.stage + 1 if count >= stage.min else call.stage
    return VoteOutcome(
        vote=Vote(stage=call.stage, by=by, at=now, channel=channel),
        seen=len(call.votes),
        stage=after,
        count=count,
        needed=stage.min,
        final=after == len(call.stages),
    )
