"""The decision series stay bounded: approver ids past the cap count under ``other``; only a
person's decisions are timed; external calls are not approvals."""

from __future__ import annotations

from dataclasses import replace

from pending_support import new_call
from prometheus_client import CollectorRegistry

from gateway.approvals.decision_metrics import APPROVER_LABELS, OTHER, DecisionMetrics


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_approvers_past_the_cap_are_counted_as_other_and_only_decisions_are_timed() -> None:
    registry = CollectorRegistry()
    metrics = DecisionMetrics(registry)
    held = new_call(now=1000.0, tool="t", rule_id="r")
    for n in range(APPROVER_LABELS + 3):
        decided = replace(held, decision="approve", decided_by=f"user:{n}", decided_at=1030.0)
        metrics.observe(decided, now=5000.0)
    metrics.observe(replace(held, decision="approve", decided_by="user:0"), now=1010.0)
    metrics.observe(replace(held, state="expired", decision="expire", decided_at=1300.0), 1300.0)
    metrics.observe(replace(held, kind="external", decision="result"), now=1400.0)

    total = APPROVER_LABELS + 4
    approvals = "lockgate_approval_decisions_total"
    assert value(registry, approvals, rule="r", tool="t", decision="approve") == total
    assert value(registry, approvals, rule="r", tool="t", decision="expire") == 1
    assert value(registry, approvals, rule="r", tool="t", decision="result") is None
    by = "lockgate_approver_decisions_total"
    assert value(registry, by, approver="user:0", decision="approve") == 2
    assert value(registry, by, approver=OTHER, decision="approve") == 3
    assert value(registry, by, approver=f"user:{APPROVER_LABELS}", decision="approve") is None
    seconds = "lockgate_approval_decision_seconds"
    assert value(registry, f"{seconds}_count", rule="r", tool="t") == total
    assert value(registry, f"{seconds}_sum", rule="r", tool="t") == 30.0 * (total - 1) + 10.0
