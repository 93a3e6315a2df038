"""`DecisionMetrics`: the Prometheus series of approval outcomes, counted as each outcome is put
on record (`gateway.approvals.outcomes.Outcomes.watch`): decisions by rule and tool, by approver
(bounded), and the time from hold to a human decision."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram

from gateway.approvals.pending import PendingCall

__all__ = ["APPROVER_LABELS", "DECISION_BUCKETS", "OTHER", "DecisionMetrics", "human_decision"]

DECISION_BUCKETS: Final = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
"""Seconds from hold to decision: a person answers in seconds to hours."""
APPROVER_LABELS: Final = 50
"""Distinct approver ids given their own label; later ones count under `OTHER`."""
OTHER: Final = "other"
NO_RULE: Final = "-"
_HUMAN: Final = frozenset({"approve", "deny", "edit", "respond"})


def human_decision(call: PendingCall) -> bool:
    """Whether ``call`` was settled by a person's decision (not an expiry or cancellation)."""
    return call.decision in _HUMAN


class DecisionMetrics:
    """``lockgate_approval_decisions_total{rule,tool,decision}``,
    ``lockgate_approver_decisions_total{approver,decision}`` (at most `APPROVER_LABELS`
    approvers by name, then ``other``) and ``lockgate_approval_decision_seconds{rule,tool}``
    (hold to a human decision; expiries and cancellations are counted, not timed).

    Args:
        registry: Where the series are registered (the gateway's own).
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.decisions = Counter(
            "lockgate_approval_decisions",
            "Approval outcomes (approve, deny, edit, respond, expire, cancel, error)",
            ["rule", "tool", "decision"],
            registry=registry,
        )
        self.by_approver = Counter(
            "lockgate_approver_decisions",
            f"Decisions per approver (the first {APPROVER_LABELS} by name, then '{OTHER}')",
            ["approver", "decision"],
            registry=registry,
        )
        self.seconds = Histogram(
            "lockgate_approval_decision_seconds",
            "Seconds from a call being held to a person's decision",
            ["rule", "tool"],
            buckets=DECISION_BUCKETS,
            registry=registry,
        )
        self._approvers: set[str] = set()

    def observe(self, call: PendingCall, now: float) -> None:
        """Count one approval's outcome, decided at ``call.decided_at`` (else ``now``)."""
        if call.kind != "approval" or call.decision is None:
            return
        rule = call.rule_id or NO_RULE
        self.decisions.labels(rule, call.tool, call.decision).inc()
        if not human_decision(call):
            return
        self.by_approver.labels(self._approver(call.decided_by or ""), call.decision).inc()
        decided = call.decided_at if call.decided_at is not None else now
        self.seconds.labels(rule, call.tool).observe(max(decided - call.created_at, 0.0))

    def _approver(self, approver: str) -> str:
        if approver in self._approvers or len(self._approvers) < APPROVER_LABELS:
            self._approvers.add(approver)
            return approver
        return OTHER
