"""Approval analytics on a served gateway: a scripted run of decisions over the REST API
(approve, deny, edit, respond, an expiry, one left waiting) read back from
``GET /api/analytics/approvals``, from ``/metrics`` and from ``lockgate approvals stats``."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
from analytics_support import CAROL_TOKEN, analytics, analytics_rig, held, wait_expired
from approvals_e2e_support import ALICE, ALICE_TOKEN, BOB_TOKEN, Rig, api_client, decide, marker
from decisions_e2e_support import lockgate
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.anyio
RECORD, BRIEF = "recorder__record", "recorder__record_brief"


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(q * len(ordered)) - 1]


async def scripted(rig: Rig) -> dict[str, str]:
    """Held calls decided one way each: two approvals by alice, a denial by carol, an edit by
    alice, a response by carol, one lapsed, one left waiting; their ids by what happened."""
    ids: dict[str, str] = {}
    async with api_client(rig.base) as alice, api_client(rig.base, CAROL_TOKEN) as carol:
        for name, api, decision, body in (
            ("approve1", alice, "approve", {}),
            ("approve2", alice, "approve", {}),
            ("deny", carol, "deny", {"message": "not today"}),
            ("edit", alice, "edit", {"args": {"value": marker("edited")}}),
            ("respond", carol, "respond", {"message": "recorded by hand"}),
        ):
            ids[name] = await held(rig, RECORD, {"value": marker(name)})
            response = await decide(api, ids[name], decision, **body)
            assert response.status_code == 200, response.text
        ids["expire"] = await held(rig, BRIEF, {"value": marker("lapse")})
        await wait_expired(alice, ids["expire"])
        ids["waiting"] = await held(rig, RECORD, {"value": marker("waiting")})
    return ids


async def records(rig: Rig, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    async with api_client(rig.base) as alice:
        return {k: (await alice.get(f"/api/approvals/{v}")).json() for k, v in ids.items()}


async def test_the_figures_count_each_outcome_per_rule_tool_and_approver_with_decision_times(
    tmp_path: Path,
) -> None:
    started = time.time()
    async with analytics_rig(tmp_path) as rig:
        ids = await scripted(rig)
        stored = await records(rig, ids)
        async with api_client(rig.base) as alice:
            stats = await analytics(alice)
            narrow = await analytics(alice, since=str(stored["waiting"]["created_at"]))
        async with api_client(rig.base, BOB_TOKEN) as bob:
            unseen = await analytics(bob)
    finished = time.time()

    overall = stats["overall"]
    assert stats["waiting"] == 1
    assert (overall["held"], overall["pending"], overall["settled"]) == (7, 1, 6)
    assert overall["counts"] == {
        "approve": 2, "deny": 1, "edit": 1, "respond": 1, "expire": 1, "cancel": 0, "error": 0,
    }  # fmt: skip
    assert overall["rates"]["approve"] == pytest.approx(2 / 6, abs=1e-4)
    assert overall["rates"]["expire"] == pytest.approx(1 / 6, abs=1e-4)
    records_ = stats["by_rule"]["records-ask"]
    assert (records_["held"], records_["counts"]["approve"], records_["pending"]) == (6, 2, 1)
    assert stats["by_rule"]["brief-records-lapse"]["counts"]["expire"] == 1
    assert stats["by_tool"][BRIEF]["rates"]["expire"] == 1.0
    assert stats["by_approver"][ALICE]["counts"] == {
        "approve": 2, "deny": 0, "edit": 1, "respond": 0, "expire": 0, "cancel": 0, "error": 0,
    }  # fmt: skip
    assert stats["by_approver"]["user:carol"]["settled"] == 2
    human = ("approve1", "approve2", "deny", "edit", "respond")
    waits = [stored[k]["decided_at"] - stored[k]["created_at"] for k in human]
    assert all(0 <= w <= finished - started for w in waits)
    decided = overall["time_to_decision"]
    assert decided["count"] == 5
    assert decided["p50"] == pytest.approx(nearest_rank(waits, 0.5))
    assert decided["p90"] == pytest.approx(nearest_rank(waits, 0.9))
    assert decided["max"] == pytest.approx(max(waits))
    assert stored["approve1"]["decided_at"] <= stored["approve2"]["created_at"]
    assert (narrow["overall"]["held"], narrow["waiting"]) == (1, 1)
    assert (unseen["overall"]["held"], unseen["waiting"], unseen["by_rule"]) == (0, 0, {})


async def test_metrics_expose_decisions_by_rule_and_approver_and_the_time_to_decide(
    tmp_path: Path,
) -> None:
    async with analytics_rig(tmp_path) as rig:
        await scripted(rig)
        async with api_client(rig.base) as alice:
            text = (await alice.get("/metrics")).text

    got = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    decisions = "lockgate_approval_decisions_total"
    rule = (("rule", "records-ask"), ("tool", RECORD))
    assert got[(decisions, (("decision", "approve"), *rule))] == 2
    assert got[(decisions, (("decision", "deny"), *rule))] == 1
    assert got[(decisions, (("decision", "edit"), *rule))] == 1
    assert got[(decisions, (("decision", "respond"), *rule))] == 1
    lapsed = (("decision", "expire"), ("rule", "brief-records-lapse"), ("tool", BRIEF))
    assert got[(decisions, lapsed)] == 1
    approver = "lockgate_approver_decisions_total"
    assert got[(approver, (("approver", ALICE), ("decision", "approve")))] == 2
    assert got[(approver, (("approver", "user:carol"), ("decision", "respond")))] == 1
    assert got[("lockgate_approval_decision_seconds_count", rule)] == 5
    assert got[("lockgate_pending_approvals", ())] == 1


async def test_the_cli_prints_the_same_figures(tmp_path: Path) -> None:
    async with analytics_rig(tmp_path) as rig:
        await scripted(rig)
        done = await lockgate(rig, ALICE_TOKEN, "approvals", "stats")
        as_json = await lockgate(rig, ALICE_TOKEN, "approvals", "stats", "--json", "--since", "1h")

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith("waiting now: 1")
    rule_row = next(line.split() for line in lines if line.startswith("records-ask "))
    assert rule_row[1:5] == ["6", "1", "2", "(40%)"]  # 2 of the rule's 5 settled calls
    assert any(line.startswith(f"{ALICE} ") for line in lines)
    assert as_json.returncode == 0, as_json.stderr
    assert '"waiting": 1' in as_json.stdout
