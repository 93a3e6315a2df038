"""What still hides a tool once its changed definition is accepted: accepting lifts the
quarantine, not a flag that ``defaults.hide_flagged`` hides nor a rule with ``effect: hide``.
An approver who accepted a definition is told so, with how to lift each."""

from __future__ import annotations

from typing import Any

from policies.engine import PolicyEngine
from policies.where import where as rule_where
from toolsets.context import ANONYMOUS
from toolsets.tooldef import ToolDef

__all__ = ["still_hiding"]


def still_hiding(engine: PolicyEngine, tool: ToolDef) -> list[dict[str, Any]]:
    """What hides ``tool`` from a caller with no roles under ``engine``, each with how to lift
    it; empty when such a caller sees it (a rule for some roles may still hide it from others:
    ``lockgate policy explain`` tells per caller)."""
    decision = engine.evaluate_visibility(tool, ANONYMOUS)
    if decision.effect != "hide":
        return []
    accepted = {flag for rule in map(engine.rule, decision.matched) for flag in rule.accept_flags}
    flags = [f for f in tool.flags if f in engine.hide_flagged and f not in accepted]
    hiding: list[dict[str, Any]] = [
        {
            "by": "flag",
            "flag": flag,
            "text": f"flagged {flag!r}, which defaults.hide_flagged hides",
            "lift": f"list {flag!r} in accept_flags of a rule matching {tool.name!r}, "
            "or take it out of defaults.hide_flagged",
        }
        for flag in flags
    ]
    if decision.rule_id is not None:
        rule = engine.rule(decision.rule_id)
        where = rule_where(rule.file, rule.line, engine.root)
        hiding.append(
            {
                "by": "rule",
                "rule": rule.id,
                "text": f"rule {rule.id!r} ({where}) hides it",
                "lift": f"change or remove rule {rule.id!r} in {where}",
            }
        )
    return hiding
