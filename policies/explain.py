"""Human and JSON renderings of a `Decision`, with the rules behind it."""

from __future__ import annotations

from typing import Any

from policies.durations import format_duration
from policies.engine import PolicyEngine
from policies.rules import CompiledRule
from toolsets.decision import ApprovalOptions, Decision

__all__ = ["decision_json", "decision_text"]


def _where(rule: CompiledRule) -> str:
    return f"{rule.file}:{rule.line}" if rule.line is not None else rule.file


def _approval_text(approval: ApprovalOptions) -> str:
    approvers = ", ".join(approval.approvers) or "any approver"
    decisions = ", ".join(sorted(approval.decisions))
    return (
        f"approvers {approvers}; expires {format_duration(approval.expires)}; "
        f"hold {format_duration(approval.hold)}; decisions {decisions}"
    )


def decision_text(engine: PolicyEngine, decision: Decision) -> str:
    """A readable explanation: the decision, the winning rule and every matching rule."""
    winner = engine.rule(decision.rule_id) if decision.rule_id is not None else None
    lines = [
        f"effect:   {decision.effect}",
        f"rule:     {decision.rule_id} ({_where(winner)})" if winner else "rule:     (defaults)",
        f"reason:   {decision.reason}",
    ]
    if decision.message is not None:
        lines.append(f"message:  {decision.message}")
    if decision.effect == "ask":
        lines.append(f"approval: {_approval_text(decision.approval)}")
    if decision.redact:
        lines.append(f"redact:   {', '.join(decision.redact)}")
    lines.append("matched:" if decision.matched else "matched:  (no rule)")
    width = max((len(rule_id) for rule_id in decision.matched), default=0)
    for rule_id in decision.matched:
        rule = engine.rule(rule_id)
        lines.append(f"  {rule_id:<{width}}  {rule.effect:<5}  {_where(rule)}")
    lines.append(f"policy:   {decision.policy_version} ({', '.join(engine.files) or 'no files'})")
    return "\n".join(lines)


def _rule_json(rule: CompiledRule) -> dict[str, Any]:
    return {"id": rule.id, "effect": rule.effect, "file": rule.file, "line": rule.line}


def decision_json(engine: PolicyEngine, decision: Decision) -> dict[str, Any]:
    """The decision as JSON-ready data, matched rules with their effect and location."""
    approval = decision.approval
    return {
        "effect": decision.effect,
        "rule": decision.rule_id,
        "reason": decision.reason,
        "message": decision.message,
        "approval": {
            "approvers": list(approval.approvers),
            "expires": approval.expires,
            "hold": approval.hold,
            "decisions": sorted(approval.decisions),
        },
        "matched": [_rule_json(engine.rule(rule_id)) for rule_id in decision.matched],
        "redact": list(decision.redact),
        "policy_version": decision.policy_version,
        "files": list(engine.files),
    }
