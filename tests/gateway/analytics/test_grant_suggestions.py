"""Grant suggestions: a pattern approved every time, N times in the window, is proposed as a
policy change that loads as a policy and, applied, allows that pattern and nothing else; a
denial of the pattern in the window takes the proposal away."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from analytics_support import CAROL_TOKEN, POLICY, analytics, analytics_rig, held
from approvals_e2e_support import (
    AGENT,
    ALICE,
    ALICE_TOKEN,
    OTHER_AGENT,
    Rig,
    api_client,
    decide,
    marker,
)
from decisions_e2e_support import lockgate

from gateway.approvals.suggestions import Suggestion, apply_suggestion
from policies import PolicyEngine
from toolsets import Principal, ToolDef

pytestmark = pytest.mark.anyio
RECORD = "recorder__record"
TOOL = ToolDef(name=RECORD, server="recorder", upstream_name="record")


async def approved_times(
    rig: Rig, value: str, times: int, who: str = AGENT, *, start: int = 0
) -> None:
    """``times`` calls of ``value`` (a new ``count`` each, from ``start``: an identical call
    would re-issue an approved one) held and approved by alice."""
    async with api_client(rig.base) as alice:
        for count in range(start, start + times):
            id = await held(rig, RECORD, {"value": value, "count": count}, who)
            assert (await decide(alice, id, "approve")).status_code == 200


def decide_with(policy: dict[str, Any], directory: Path, args: dict[str, Any], who: str) -> str:
    path = directory / "applied.yaml"
    path.write_text(yaml.safe_dump(policy, sort_keys=False))
    engine = PolicyEngine.load([path])
    return engine.evaluate_call(TOOL, args, Principal(id=who)).effect


async def test_five_approvals_of_one_pattern_suggest_an_allow_rule_for_exactly_it(
    tmp_path: Path,
) -> None:
    value = marker("same")
    async with analytics_rig(tmp_path) as rig:
        await approved_times(rig, value, 4)
        async with api_client(rig.base) as alice:
            before = await analytics(alice)
        await approved_times(rig, value, 1, start=4)
        async with api_client(rig.base) as alice:
            after = await analytics(alice)
        cli = await lockgate(rig, ALICE_TOKEN, "approvals", "stats", "--suggest")

    assert before["suggestions"] == []
    [found] = after["suggestions"]
    assert (found["tool"], found["rule_id"], found["principal"]) == (RECORD, "records-ask", AGENT)
    assert (found["args"], found["approvals"], found["approved_by"]) == (
        {"value": value},
        5,
        [ALICE],
    )
    assert cli.returncode == 0, cli.stderr
    assert f"suggestion {found['id']}:" in cli.stdout
    assert found["policy"].strip() in cli.stdout
    snippet = tmp_path / "snippet.yaml"
    snippet.write_text(found["policy"])
    PolicyEngine.load([snippet])  # the snippet alone is a valid policy file
    pattern = {k: found[k] for k in ("tool", "rule_id", "principal", "args")}
    suggestion = Suggestion(**pattern, approvals=5, approved_by=(ALICE,), first_at=0, last_at=0)
    applied = apply_suggestion(yaml.safe_load(POLICY.read_text()), suggestion)
    assert decide_with(applied, tmp_path, {"value": value, "count": 9}, AGENT) == "allow"
    assert decide_with(applied, tmp_path, {"value": value + "x"}, AGENT) == "ask"
    assert decide_with(applied, tmp_path, {"value": value}, OTHER_AGENT) == "ask"
    assert decide_with(applied, tmp_path, {"count": 1}, AGENT) == "ask"  # not an error: a deny
    original = yaml.safe_load(POLICY.read_text())
    assert decide_with(original, tmp_path, {"value": value, "count": 9}, AGENT) == "ask"


async def test_a_denial_of_the_pattern_in_the_window_takes_the_suggestion_away(
    tmp_path: Path,
) -> None:
    value, other = marker("denied"), marker("kept")
    async with analytics_rig(tmp_path) as rig:
        await approved_times(rig, value, 5)
        await approved_times(rig, other, 5, OTHER_AGENT)
        async with api_client(rig.base) as alice:
            suggested = await analytics(alice)
        async with api_client(rig.base, CAROL_TOKEN) as carol:
            id = await held(rig, RECORD, {"value": value, "count": 99})
            assert (await decide(carol, id, "deny")).status_code == 200
            after = await analytics(carol)
            lower = await analytics(carol, min_approvals=6)

    assert {(s["principal"], s["args"]["value"]) for s in suggested["suggestions"]} == {
        (AGENT, value),
        (OTHER_AGENT, other),
    }  # two callers, different values: no pattern across callers
    assert [(s["principal"], s["args"]) for s in after["suggestions"]] == [
        (OTHER_AGENT, {"value": other})
    ]
    assert lower["suggestions"] == []
