"""Human and JSON renderings of a `Decision`, with the rules behind it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policies.cases import CallSpec, session_state, tool_for
from policies.condition_trace import ConditionPart, condition_words, trace_when
from policies.durations import format_duration
from policies.engine import PolicyEngine
from policies.explain_gates import GateStatus, gate_json, gate_lines
from policies.rules import CompiledRule
from toolsets.context import Principal
from toolsets.decision import ApprovalOptions, Decision

__all__ = ["call_trace", "decision_json", "decision_text"]


def _where(rule: CompiledRule) -> str:
    return f"{rule.file}:{rule.line}" if rule.line is not None else rule.file


def _approval_text(approval: ApprovalOptions) -> str:
    approvers = ", ".join(approval.approvers) or "any approver"
    decisions = ", ".join(sorted(approval.decisions))
    text = (
        f"approvers {approvers}; expires {format_duration(approval.expires)}; "
        f"hold {format_duration(approval.hold)}; decisions {decisions}"
    )
    if approval.grants != ("once",):
        text += f"; grants {', '.join(approval.grants)} (max {format_duration(approval.grant_max)})"
    if approval.stages:
        stages = " then ".join(f"{s.min} of {', '.join(s.approvers)}" for s in approval.stages)
        text += f"; stages {stages}"
    if approval.break_glass:
        text += f"; break-glass {', '.join(approval.break_glass)}"
    return text


def _approval_json(approval: ApprovalOptions) -> dict[str, Any]:
    return {
        "approvers": list(approval.approvers),
        "expires": approval.expires,
        "hold": approval.hold,
        "decisions": sorted(approval.decisions),
        "grants": list(approval.grants),
        "grant_max": approval.grant_max,
        "stages": [{"approvers": list(s.approvers), "min": s.min} for s in approval.stages],
        "break_glass": list(approval.break_glass),
    }


def _accepting(engine: PolicyEngine, decision: Decision, flag: str) -> list[CompiledRule]:
    return [r for r in map(engine.rule, decision.matched) if flag in r.accept_flags]


def call_trace(
    engine: PolicyEngine, call: CallSpec, decision: Decision
) -> tuple[ConditionPart, ...]:
    """Which top-level ``||`` part of the deciding rule's ``when`` held ``call``, each part
    checked against it as `evaluate` decided it (see `trace_when`); empty when there is no
    such ``||``, no deciding rule, or ``call`` is a listing, a resource read or a prompt get."""
    if call.tool is None or call.stage != "call" or decision.rule_id is None:
        return ()
    rule = engine.rule(decision.rule_id)
    if rule.when is None:
        return ()
    tool = tool_for(call.tool, call.server, call.annotations, call.flags)
    who = Principal(id=call.principal, roles=frozenset(call.roles), claims=call.claims)
    session = session_state(call.session, engine)
    parts = trace_when(rule, tool, call.args, who, session, labels=engine.tool_labels(tool))
    return parts if len(parts) > 1 else ()


def _condition(engine: PolicyEngine, decision: Decision, trace: Sequence[ConditionPart]) -> str:
    """The deciding rule's condition in plain words, as the approval context pack says it
    (empty without a ``trace``)."""
    if not trace or decision.rule_id is None:
        return ""
    return condition_words(engine.rule(decision.rule_id), tuple(trace))


def _flag_lines(engine: PolicyEngine, decision: Decision, flags: Sequence[str]) -> list[str]:
    """One line per flag of the tool: whether it hides the tool, and which rules accept it."""
    width = max(len(flag) for flag in flags)
    lines = ["flags:"]
    for flag in flags:
        accepting = _accepting(engine, decision, flag)
        if flag not in engine.hide_flagged:
            status = "not in defaults.hide_flagged"
        elif accepting:
            status = "accepted by " + ", ".join(f"{r.id} ({_where(r)})" for r in accepting)
        else:
            status = "hides the tool: in defaults.hide_flagged, no matching rule accepts it"
        lines.append(f"  {flag:<{width}}  {status}")
    return lines


def _limit_lines(engine: PolicyEngine, decision: Decision) -> list[str]:
    """The rate limits of the matching rules, and whether this call counts against them."""
    if not decision.limits:
        return []
    status = (
        "counted (the call runs at once)"
        if decision.effect == "allow"
        else f"not counted (effect {decision.effect}: only calls that run at once count)"
    )
    lines = [f"limits:   {status}"]
    width = max(len(limit.rule_id) for limit in decision.limits)
    texts = [limit.describe() for limit in decision.limits]
    room = max(len(text) for text in texts)
    for limit, text in zip(decision.limits, texts, strict=True):
        where = _where(engine.rule(limit.rule_id))
        lines.append(f"  {limit.rule_id:<{width}}  {text:<{room}}  {where}")
    return lines


def _shadow_lines(engine: PolicyEngine, decision: Decision) -> list[str]:
    """Shadow rules that matched: what each would have decided (never enforced)."""
    if not decision.shadow:
        return []
    lines = ["shadow:   (not enforced)"]
    width = max(len(match.rule_id) for match in decision.shadow)
    wheres = [_where(engine.rule(match.rule_id)) for match in decision.shadow]
    room = max(len(where) for where in wheres)
    for match, where in zip(decision.shadow, wheres, strict=True):
        limit = f"; limit {match.limit.describe()}" if match.limit is not None else ""
        lines.append(
            f"  {match.rule_id:<{width}}  {match.effect:<5}  {where:<{room}}  {match.reason}{limit}"
        )
    return lines


def decision_text(
    engine: PolicyEngine,
    decision: Decision,
    flags: Sequence[str] = (),
    *,
    gates: Sequence[GateStatus] = (),
    trace: Sequence[ConditionPart] = (),
) -> str:
    """A readable explanation: the decision, the winning rule (under it, with a ``trace`` of
    its ``when`` from `call_trace`, the part that held), the rate limits of the matching
    rules, the tool's ``flags`` (whether each hides it), its session ``gates`` (see
    `gate_statuses`), every matching rule and the shadow rules that matched."""
    winner = engine.rule(decision.rule_id) if decision.rule_id is not None else None
    lines = [
        f"effect:   {decision.effect}",
        f"rule:     {decision.rule_id} ({_where(winner)})" if winner else "rule:     (defaults)",
    ]
    if condition := _condition(engine, decision, trace):
        lines.append(f"          {condition}")
    lines.append(f"reason:   {decision.reason}")
    if decision.message is not None:
        lines.append(f"message:  {decision.message}")
    if decision.effect == "ask":
        lines.append(f"approval: {_approval_text(decision.approval)}")
    if decision.redact:
        lines.append(f"redact:   {', '.join(decision.redact)}")
    lines.extend(_limit_lines(engine, decision))
    if flags:
        lines.extend(_flag_lines(engine, decision, flags))
    lines.extend(gate_lines(gates))
    lines.append("matched:" if decision.matched else "matched:  (no rule)")
    width = max((len(rule_id) for rule_id in decision.matched), default=0)
    for rule_id in decision.matched:
        rule = engine.rule(rule_id)
        lines.append(f"  {rule_id:<{width}}  {rule.effect:<5}  {_where(rule)}")
    lines.extend(_shadow_lines(engine, decision))
    lines.append(f"policy:   {decision.policy_version} ({', '.join(engine.files) or 'no files'})")
    return "\n".join(lines)


def _rule_json(rule: CompiledRule) -> dict[str, Any]:
    return {"id": rule.id, "effect": rule.effect, "file": rule.file, "line": rule.line}


def _limit_json(rule: CompiledRule) -> dict[str, Any]:
    assert rule.limit is not None  # the decision's limits are its matching rules'
    return rule.limit.to_json() | {"file": rule.file, "line": rule.line}


def decision_json(
    engine: PolicyEngine,
    decision: Decision,
    flags: Sequence[str] = (),
    *,
    gates: Sequence[GateStatus] = (),
    trace: Sequence[ConditionPart] = (),
) -> dict[str, Any]:
    """The decision as JSON-ready data, with (given a ``trace`` from `call_trace`) the
    deciding rule's condition in plain words (``condition``, else null) and each ``||`` part of
    its ``when`` with whether it held (``condition_parts``), matched rules with their effect
    and location, their rate limits (``limits``; ``limits_counted``: whether this call counts),
    shadow rules that matched with what they would have decided, and per flag of the tool
    whether ``defaults.hide_flagged`` names it and which rules accept it, and the tool's
    session ``gates``."""
    return {
        "effect": decision.effect,
        "rule": decision.rule_id,
        "condition": _condition(engine, decision, trace) or None,
        "condition_parts": [{"part": part.source, "held": part.held} for part in trace],
        "reason": decision.reason,
        "message": decision.message,
        "approval": _approval_json(decision.approval),
        "matched": [_rule_json(engine.rule(rule_id)) for rule_id in decision.matched],
        "redact": list(decision.redact),
        "limits": [_limit_json(engine.rule(limit.rule_id)) for limit in decision.limits],
        "limits_counted": bool(decision.limits) and decision.effect == "allow",
        "shadow": [
            _rule_json(engine.rule(match.rule_id))
            | {"effect": match.effect, "reason": match.reason}
            | ({"limit": match.limit.to_json()} if match.limit is not None else {})
            for match in decision.shadow
        ],
        "flags": [
            {
                "flag": flag,
                "hide_flagged": flag in engine.hide_flagged,
                "accepted_by": [rule.id for rule in _accepting(engine, decision, flag)],
            }
            for flag in flags
        ],
        "gates": gate_json(gates),
        "policy_version": decision.policy_version,
        "files": list(engine.files),
    }
