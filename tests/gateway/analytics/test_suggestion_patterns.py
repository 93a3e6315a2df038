"""Suggestions from records: a pattern shared by several callers is proposed across callers
only when some argument was always the same; argument names that are not identifiers become
conditions that still load and match; a policy's default held calls need the allow rule only."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml
from pending_support import new_call

from gateway.approvals.pending import PendingCall
from gateway.approvals.suggestions import apply_suggestion, suggest
from policies import PolicyEngine
from toolsets import Principal, ToolDef

TOOL = ToolDef(name="crm__update", server="crm", upstream_name="update")
POLICY: dict[str, Any] = {
    "version": 1,
    "defaults": {"effect": "ask"},
    "rules": [{"id": "crm-asks", "tools": ["crm__*"], "effect": "ask", "unless": "false"}],
}


def approved(principal: str, args: dict[str, Any], rule: str | None = "crm-asks") -> PendingCall:
    call = new_call(tool=TOOL.name, principal=principal, args=args, rule_id=rule)
    return replace(call, state="approved", decision="approve", decided_by="user:alice")


def effect(policy: dict[str, Any], tmp_path: Path, args: dict[str, Any], who: str) -> str:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return PolicyEngine.load([path]).evaluate_call(TOOL, args, Principal(id=who)).effect


def test_a_pattern_across_callers_with_an_odd_argument_name_allows_only_that_value(
    tmp_path: Path,
) -> None:
    calls = [approved(f"agent:{n % 2}", {"record-id": "r-7", "n": n}) for n in range(4)]
    calls += [approved("agent:0", {"n": 9}), approved("agent:1", {"n": 8})]  # no record-id

    found = suggest(calls, min_approvals=4)

    assert [(s.principal, s.args, s.approvals) for s in found] == []  # no id every time
    [across] = suggest(calls[:4], min_approvals=4)
    assert (across.principal, across.args) == (None, {"record-id": "r-7"})
    applied = apply_suggestion(POLICY, across)
    assert applied["rules"][1]["unless"].startswith("(false) || (")
    assert effect(applied, tmp_path, {"record-id": "r-7"}, "agent:5") == "allow"
    assert effect(applied, tmp_path, {"record-id": "r-8"}, "agent:5") == "ask"
    assert effect(applied, tmp_path, {"n": 1}, "agent:5") == "ask"
    assert effect(POLICY, tmp_path, {"record-id": "r-7"}, "agent:5") == "ask"


def test_calls_the_default_held_need_the_allow_rule_alone(tmp_path: Path) -> None:
    calls = [approved("agent:a", {"id": 3, "n": n}, rule=None) for n in range(3)]
    policy = {"version": 1, "defaults": {"effect": "ask"}}

    [found] = suggest(calls, min_approvals=3)

    assert found.exclusion() is None
    applied = apply_suggestion(policy, found)
    assert [r["effect"] for r in applied["rules"]] == ["allow"]
    assert effect(applied, tmp_path, {"id": 3, "n": 99}, "agent:a") == "allow"
    assert effect(applied, tmp_path, {"id": 4}, "agent:a") == "ask"
    assert effect(applied, tmp_path, {"id": 3}, "agent:b") == "ask"
