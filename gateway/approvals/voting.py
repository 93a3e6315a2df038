"""Staged approvals and break-glass as the approval service applies them.

The vote that approves a call, and each break-glass, is on record (audit log) before the store
changes, like every decision. A vote that does not decide lets nothing run: it is put on record
right after it is counted, so a vote worked out again never leaves a stale record. Counting is a
compare-and-set on the number of votes the call had: in one process the service decides one call
at a time; a vote that lost to another process's is worked out again.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gateway.approvals.access import may_decide
from gateway.approvals.asked import Asked
from gateway.approvals.errors import DecisionInvalid, NotAnApprover, PendingConflict
from gateway.approvals.grants import Grant
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import origin_of
from gateway.approvals.stages import VoteOutcome, cast, has_voted
from gateway.events import tool_events as events

if TYPE_CHECKING:
    from gateway.approvals.deciding import Decisions

__all__ = ["break_glass", "vote"]

log = logging.getLogger("lockgate.approvals")


async def vote(
    decisions: Decisions, call: PendingCall, asked: Asked, grant: Grant | None
) -> PendingCall:
    """Record ``asked.by``'s approving vote on the staged ``call``; the vote completing the last
    stage approves it (and makes ``grant``, which no other vote may make).

    Raises:
        DecisionInvalid: a grant with a vote that does not approve the call.
        PendingConflict: the call was decided meanwhile, or ``asked.by`` voted meanwhile.
        NotAnApprover: others' votes moved the call to a stage ``asked.by`` is not in.
    """
    # Every lost race means another vote was counted: at most this many can be.
    for _ in range(sum(stage.min for stage in call.stages) + 1):
        outcome = cast(call, asked.by.id, channel=asked.channel, now=decisions.store.now())
        if grant is not None and not outcome.final:
            raise DecisionInvalid(
                f"a grant is made by the vote that approves {call.id}; this one is vote "
                f"{outcome.count} of {outcome.needed} in stage {outcome.vote.stage + 1} of "
                f"{len(call.stages)}: vote without a grant"
            )
        decided = await _approval_on_record(decisions, call, asked, outcome, grant)
        try:
            voted = await decisions.store.vote(
                call.id, outcome.vote, seen=outcome.seen, stage=outcome.stage, decided=decided
            )
        except PendingConflict as exc:
            call = _still_voting(exc, asked)  # another process's vote came first
            continue
        await _counted(decisions, voted, asked, outcome)
        if grant is not None:
            await decisions.grants.keep(grant)
        return voted
    raise PendingConflict(call, f"count {asked.by.id}'s vote: others kept voting first")


def _still_voting(lost: PendingConflict, asked: Asked) -> PendingCall:
    """The call to vote on again after a lost compare-and-set, or why not."""
    call = lost.call
    if call.state != "pending" or has_voted(call, asked.by.id):
        raise lost
    if not may_decide(call, asked.by, as_caller=False):
        raise NotAnApprover(
            f"{asked.by.id!r} may not vote on {call.id} now: others' votes moved it to stage "
            f"{call.stage + 1} of {len(call.stages)}"
        ) from None
    return call


async def _approval_on_record(
    decisions: Decisions,
    call: PendingCall,
    asked: Asked,
    outcome: VoteOutcome,
    grant: Grant | None,
) -> dict[str, Any] | None:
    """For the vote that approves: put the approval on record; its fields (else None)."""
    if not outcome.final:
        return None
    decided: dict[str, Any] = {"decided_by": asked.by.id, "decision": "approve"}
    decided["channel"] = asked.channel
    if grant is not None:
        decided["grant_id"] = grant.id
    votes = (*call.votes, outcome.vote)
    approved = replace(call, state="approved", votes=votes, stage=outcome.stage, **decided)
    await decisions.outcomes.announce(approved)
    if grant is not None:
        await decisions.grants.announce(grant)
    return decided


async def _counted(
    decisions: Decisions, call: PendingCall, asked: Asked, outcome: VoteOutcome
) -> None:
    """Log a counted vote; one that did not decide goes on record as ``tool.approval.vote``."""
    log.info(
        "%s: vote %d of %d in stage %d of %d by %s via %s",
        *(call.id, outcome.count, outcome.needed, outcome.vote.stage + 1, len(call.stages)),
        *(asked.by.id, asked.channel),
    )
    if outcome.final:
        return
    event = events.approval_vote(
        await decisions.tools.of(call),
        origin_of(call),
        approval_id=call.id,
        by=asked.by.id,
        channel=asked.channel,
        stage=outcome.vote.stage,
        votes=outcome.count,
        needed=outcome.needed,
        stages=len(call.stages),
    )
    await decisions.record(event)


async def break_glass(decisions: Decisions, call: PendingCall, asked: Asked) -> PendingCall:
    """Approve ``call`` at once for ``asked.by``, skipping any remaining stages; the reason is
    on record (``tool.approval.break_glass``, then ``tool.approval.resolved``) first."""
    reason = (asked.reason or "").strip()
    update: dict[str, Any] = {"decided_by": asked.by.id, "decision": "approve"}
    update |= {"channel": asked.channel, "message": reason, "stage": len(call.stages)}
    event = events.approval_break_glass(
        await decisions.tools.of(call),
        origin_of(call),
        approval_id=call.id,
        by=asked.by.id,
        reason=reason,
        channel=asked.channel,
        skipped=len(call.stages) - call.stage,
    )
    await decisions.record(event)
    await decisions.outcomes.announce(replace(call, state="approved", **update))
    approved = await decisions.store.transition(
        call.id, expect={"pending"}, to="approved", **update
    )
    log.warning(
        "%s: break-glass approval by %s via %s: %s", call.id, asked.by.id, asked.channel, reason
    )
    return approved
