"""The pending-call state machine as pure functions: a record in, the next one (or a refusal) out.

Every backend applies these inside its own atomic read-modify-write, so the rules live here once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from gateway.approvals.errors import PendingConflict
from gateway.approvals.pending import (
    MUTABLE_FIELDS,
    TERMINAL_STATES,
    Kind,
    PendingCall,
    State,
    Vote,
)
from gateway.approvals.wire import upstream_task_of

INTERRUPTED: Final = (
    "interrupted: the gateway stopped while this call was executing; it was not re-run"
)

_NEXT: Final[Mapping[Kind, Mapping[State, frozenset[State]]]] = {
    "approval": {
        # failed: the tool changed under a held call (refused when decided, or before it ran)
        "pending": frozenset({"approved", "denied", "expired", "cancelled", "done", "failed"}),
        "approved": frozenset({"executing", "failed"}),
        "executing": frozenset({"done", "failed"}),
    },
    "external": {
        "pending": frozenset({"done", "failed", "expired", "cancelled"}),
    },
    "connect": {  # approved: the caller connected; the held call then runs once
        "pending": frozenset({"approved", "expired", "cancelled", "failed"}),
        "approved": frozenset({"executing", "failed"}),
        "executing": frozenset({"done", "failed"}),
    },
}


@dataclass(frozen=True, slots=True)
class Step:
    """The outcome of planning one change.

    Attributes:
        call: The record after the step (the current one when nothing changes).
        changed: True when ``call`` must be written.
        error: Raised to the caller once the write (if any) is durable.
    """

    call: PendingCall
    changed: bool = False
    error: PendingConflict | None = None


Plan = Callable[[PendingCall], Step]


def check_transition(expect: Collection[State], to: State, changes: Mapping[str, Any]) -> None:
    """Refuse, before touching the store, a transition no record could ever make.

    Raises:
        ValueError: ``to`` is unreachable from some state in ``expect``, or ``changes`` names a
            field that is fixed at creation.
    """
    if not expect:
        raise ValueError("transition needs at least one expected state")
    for state in expect:
        if not any(to in table.get(state, ()) for table in _NEXT.values()):
            raise ValueError(f"No transition from {state!r} to {to!r}")
    if fixed := set(changes) - MUTABLE_FIELDS:
        raise ValueError(f"A transition cannot change {sorted(fixed)}")


def _expired(call: PendingCall, now: float) -> PendingCall:
    return replace(call, state="expired", decision="expire", updated_at=now, decided_at=now)


def _overdue(call: PendingCall, now: float) -> bool:
    return call.state == "pending" and call.expires_at <= now


def transition(
    expect: Collection[State], to: State, changes: Mapping[str, Any], now: float
) -> Plan:
    """Plan a compare-and-set from one of ``expect`` to ``to``; an overdue pending call expires."""

    def plan(call: PendingCall) -> Step:
        action = f"move it to {to!r}"
        if _overdue(call, now):
            expired = _expired(call, now)
            wanted = to == "expired" and "pending" in expect
            return Step(
                expired, changed=True, error=None if wanted else PendingConflict(expired, action)
            )
        if to == "expired":  # only a passed deadline expires a call
            return Step(call, error=PendingConflict(call, "expire it before its deadline"))
        allowed = _NEXT[call.kind].get(call.state, frozenset())
        if call.state not in expect or to not in allowed:
            return Step(call, error=PendingConflict(call, action))
        decided_at = now if "decision" in changes else call.decided_at
        new = replace(call, state=to, updated_at=now, decided_at=decided_at, **changes)
        return Step(new, changed=True)

    return plan


def vote(
    vote: Vote, *, seen: int, stage: int, decided: Mapping[str, Any] | None, now: float
) -> Plan:
    """Plan recording one approving vote on a pending call that has exactly ``seen`` votes
    (the compare-and-set), moving it to ``stage``; with ``decided`` (the fields of the
    approval), the call becomes ``approved``. A principal votes at most once per call."""

    def plan(call: PendingCall) -> Step:
        if _overdue(call, now):
            expired = _expired(call, now)
            return Step(expired, changed=True, error=PendingConflict(expired, "vote on it"))
        if call.state != "pending":
            return Step(call, error=PendingConflict(call, "vote on it"))
        if any(v.by == vote.by for v in call.votes):
            return Step(call, error=PendingConflict(call, f"count a second vote by {vote.by}"))
        if len(call.votes) != seen:
            return Step(call, error=PendingConflict(call, "count a vote: others voted meanwhile"))
        changes = dict(decided or {})
        state: State = "approved" if decided is not None else "pending"
        decided_at = now if decided is not None else call.decided_at
        voted = replace(
            call, votes=(*call.votes, vote), stage=stage, updated_at=now, decided_at=decided_at
        )
        return Step(replace(voted, state=state, **changes), changed=True)

    return plan


def deliver(now: float) -> Plan:
    """Plan handing a finished call's outcome to one caller: terminal and not yet delivered."""

    def plan(call: PendingCall) -> Step:
        if call.state not in TERMINAL_STATES or call.delivered:
            why = "it was already delivered" if call.delivered else "it has no outcome yet"
            return Step(call, error=PendingConflict(call, f"deliver it: {why}"))
        return Step(replace(call, delivered=True, updated_at=now), changed=True)

    return plan


def expire_if_due(now: float) -> Plan:
    """Plan marking a pending call past its deadline ``expired``; anything else is left alone."""

    def plan(call: PendingCall) -> Step:
        return Step(_expired(call, now), changed=True) if _overdue(call, now) else Step(call)

    return plan


def interrupt(now: float) -> Plan:
    """Plan failing a call found ``executing`` at startup: it began and never finished."""

    def plan(call: PendingCall) -> Step:
        if call.state != "executing":
            return Step(call)
        failed = replace(call, state="failed", decision="error", error=INTERRUPTED, updated_at=now)
        return Step(failed, changed=True)

    return plan


def task_ended(to: State, changes: Mapping[str, Any], now: float) -> Plan:
    """Plan recording the outcome of the upstream task an approved call ran as: a ``done``
    call whose result stands in for that task (`gateway.approvals.wire.UPSTREAM_TASK`) moves
    to ``to`` with ``changes``; anything else (recorded already) is left alone."""

    def plan(call: PendingCall) -> Step:
        if call.state != "done" or upstream_task_of(call.result) is None:
            return Step(call)
        return Step(replace(call, state=to, updated_at=now, **changes), changed=True)

    return plan
