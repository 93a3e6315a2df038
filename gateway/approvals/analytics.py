"""Approval analytics read from the pending-call records: how held calls were settled (approve,
deny, edit, respond, expire, cancel, error) and how long a person took, overall and per rule,
tool and approver, and how many calls wait now.

Computed from the store, not from this process's counters, so the figures are the same after a
restart and on every replica sharing the store. A call counts in the window it was held in; its
time to decision is ``decided_at - created_at`` (the record's own timestamps).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from gateway.approvals._query import Query
from gateway.approvals.access import may_see
from gateway.approvals.decision_metrics import NO_RULE, human_decision
from gateway.approvals.pending import PendingCall
from gateway.approvals.store import PendingStore
from toolsets.context import Principal

__all__ = [
    "DEFAULT_WINDOW",
    "OUTCOMES",
    "approval_stats",
    "decision_seconds",
    "percentile",
    "read_window",
    "summarise",
]

DEFAULT_WINDOW: Final = 7 * 86400.0
"""Seconds of history the figures cover unless asked otherwise."""
OUTCOMES: Final = ("approve", "deny", "edit", "respond", "expire", "cancel", "error")
"""How an approval can be settled, in the order the figures list them."""


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0 < q <= 1) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def decision_seconds(call: PendingCall) -> float | None:
    """Seconds from hold to a person's decision; None for calls no person decided (yet)."""
    if not human_decision(call):
        return None
    decided = call.decided_at
    if decided is None:  # a record from before ``decided_at``: its last vote, else its update
        decided = call.votes[-1].at if call.votes else _last_change_was_the_decision(call)
    return None if decided is None else max(decided - call.created_at, 0.0)


def _last_change_was_the_decision(call: PendingCall) -> float | None:
    """``updated_at`` while the decision is the last change (the call did not run since)."""
    settled = call.state in {"approved", "denied"} or (
        call.state == "done" and call.decision == "respond"
    )
    return call.updated_at if settled and not call.delivered else None


def summarise(calls: Iterable[PendingCall]) -> dict[str, Any]:
    """The figures of a group of approvals: held, still pending, settled; count and rate
    (of the settled) of each outcome; time to decision (p50, p90, max) over human decisions."""
    group = list(calls)
    settled = [c for c in group if c.decision in OUTCOMES]
    counts = {o: sum(1 for c in settled if c.decision == o) for o in OUTCOMES}
    waits = [s for s in (decision_seconds(c) for c in group) if s is not None]
    return {
        "held": len(group),
        "pending": sum(1 for c in group if c.state == "pending"),
        "settled": len(settled),
        "counts": counts,
        "rates": {o: round(n / len(settled), 4) if settled else None for o, n in counts.items()},
        "time_to_decision": {
            "count": len(waits),
            "p50": percentile(waits, 0.5),
            "p90": percentile(waits, 0.9),
            "max": max(waits, default=None),
        },
    }


def _grouped(
    calls: Iterable[PendingCall], key: Callable[[PendingCall], str | None]
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[PendingCall]] = defaultdict(list)
    for call in calls:
        name = key(call)
        if name is not None:
            groups[name].append(call)
    return {name: summarise(group) for name, group in sorted(groups.items())}


def approval_stats(
    calls: Sequence[PendingCall], *, waiting: int, since: float, until: float
) -> dict[str, Any]:
    """The analytics of the approvals ``calls`` held in ``[since, until]``; ``waiting``: how
    many wait for a decision now (whenever held). Approvers are counted on the calls they
    decided (an expiry has none)."""
    return {
        "since": since,
        "until": until,
        "waiting": waiting,
        "overall": summarise(calls),
        "by_rule": _grouped(calls, lambda c: c.rule_id or NO_RULE),
        "by_tool": _grouped(calls, lambda c: c.tool),
        "by_approver": _grouped(calls, lambda c: c.decided_by if human_decision(c) else None),
    }


async def read_window(
    store: PendingStore, who: Principal | None, *, since: float, now: float
) -> tuple[list[PendingCall], int]:
    """The approvals held since ``since`` that ``who`` may see (None: all of them), and how
    many approvals ``who`` may see wait now (pending, not past their deadline)."""
    held = await store.records.query(Query(kind="approval", created_since=since))
    open_ = await store.records.query(Query(kind="approval", states=frozenset({"pending"})))

    def visible(call: PendingCall) -> bool:
        return who is None or may_see(call, who)

    waiting = sum(1 for c in open_ if c.expires_at > now and visible(c))
    return [c for c in held if visible(c)], waiting
