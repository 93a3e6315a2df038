"""Staged (M-of-N) approvals and break-glass over the REST API and the CLI, with real MCP
clients of both eras waiting: two of security, then the CTO; one vote per person; twenty
concurrent votes; break-glass only with a reason, on the audit log."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import (
    ALICE,
    ALICE_TOKEN,
    Rig,
    agent_client,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
    while_held,
)
from decisions_e2e_support import (
    CTO_TOKEN,
    HELD,
    ONCALL,
    ONCALL_TOKEN,
    SECURITY_TOKENS,
    audited,
    left_held,
    lockgate,
    lockgate_together,
)
from support import MODES

SEC2_TOKEN = SECURITY_TOKENS["user:sec2"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_caller_waits_while_two_of_security_and_then_the_cto_approve(
    decisions_rig: Rig, mode: str
) -> None:
    rig, value = decisions_rig, marker("stage")
    steps: dict[str, Any] = {}
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base) as alice,
        api_client(rig.base, SEC2_TOKEN) as sec2,
        api_client(rig.base, CTO_TOKEN) as cto,
    ):

        async def vote_in_order() -> dict[str, Any]:
            held = await wait_for_call(alice, value)
            id = held["id"]
            steps["cto too early"] = await decide(cto, id, "approve")
            steps["alice"] = await decide(alice, id, "approve")
            steps["alice again"] = await decide(alice, id, "approve")
            steps["sec2"] = await decide(sec2, id, "approve")
            steps["cto"] = await decide(cto, id, "approve")
            return held

        with anyio.fail_after(30):
            result, held = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), vote_in_order
            )
    statuses = {step: response.status_code for step, response in steps.items()}
    assert statuses == {
        "cto too early": 404,
        "alice": 200,
        "alice again": 409,
        "sec2": 200,
        "cto": 200,
    }
    first, second, last = (steps[k].json() for k in ("alice", "sec2", "cto"))
    assert (first["state"], first["stage"], len(first["votes"])) == ("pending", 0, 1)
    assert (second["state"], second["stage"]) == ("pending", 1)
    assert (last["state"], last["stage"], last["decided_by"]) == ("approved", 2, "user:cto")
    assert [v["by"] for v in last["votes"]] == [ALICE, "user:sec2", "user:cto"]
    assert held["stages"] == [
        {"approvers": ["role:security"], "min": 2},
        {"approvers": ["user:cto"], "min": 1},
    ]
    assert (held["break_glass"], held["grants"], held["grant_max"]) == (
        ["role:oncall"],
        ["once"],
        None,
    )
    assert "one vote per person" in steps["alice again"].json()["detail"]
    assert text_of(result) == f"recorded {value}"
    assert len(rig.executions(value)) == 1


async def test_twenty_concurrent_votes_over_http_leave_one_consistent_record(
    decisions_rig: Rig,
) -> None:
    rig, value = decisions_rig, marker("crowd")
    tokens = [ALICE_TOKEN, *SECURITY_TOKENS.values()]
    statuses: list[int] = []
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as alice:
        with anyio.fail_after(30):
            await client.call_tool(HELD, {"value": value})
        id = (await wait_for_call(alice, value))["id"]

        async def vote(token: str) -> None:
            async with api_client(rig.base, token) as api:
                statuses.append((await decide(api, id, "approve")).status_code)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for token in tokens:
                    tg.start_soon(vote, token)
        record = (await alice.get(f"/api/approvals/{id}")).json()
    voters = [vote["by"] for vote in record["votes"]]
    assert len(tokens) == 20
    assert statuses.count(200) == len(voters) == len(set(voters)) == 12
    assert set(statuses) - {200} <= {403, 404}  # the first stage filled up before they came
    assert (record["state"], record["stage"]) == ("pending", 1)
    counts = [e["votes"] for e in audited(rig.log.parent, "tool.approval.vote", approval_id=id)]
    assert sorted(counts) == list(range(1, 13))


async def test_break_glass_from_the_cli_needs_a_reason_and_is_on_the_audit_log(
    decisions_rig: Rig,
) -> None:
    rig, value = decisions_rig, marker("stage")
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as alice:
        first, id = await left_held(client, alice, value)
        approve = ("approvals", "approve", id)
        with anyio.fail_after(100):  # three CLI process starts: slow on a loaded machine
            voted, reasonless = await lockgate_together(
                rig, (ALICE_TOKEN, *approve), (ONCALL_TOKEN, *approve, "--break-glass")
            )
            glass = await lockgate(
                rig, ONCALL_TOKEN, *approve, "--break-glass", "--reason", "outage: disk full"
            )
            ran = await client.call_tool(HELD, {"value": value})
    assert pending_meta(first)["state"] == "pending"
    assert voted.stdout == f"{id}: vote recorded; pending, stage 1 of 2 has 1 of 2 votes\n"
    assert reasonless.returncode == 1
    assert "break-glass needs a reason" in reasonless.stderr
    assert "Traceback" not in reasonless.stderr
    assert glass.returncode == 0, glass.stderr
    assert glass.stdout == f"{id}: approved (approve by {ONCALL}) -- break-glass, on record\n"
    assert text_of(ran) == f"recorded {value}"
    (entry,) = audited(rig.log.parent, "tool.approval.break_glass", approval_id=id)
    assert (entry["by"], entry["reason"], entry["skipped_stages"]) == (
        ONCALL,
        "outage: disk full",
        2,
    )
    (resolved,) = audited(rig.log.parent, "tool.approval.resolved", approval_id=id)
    assert (resolved["decided_by"], resolved["message"], resolved["channel"]) == (
        ONCALL,
        "outage: disk full",
        "cli",
    )


async def test_break_glass_is_refused_to_an_approver_without_the_role(decisions_rig: Rig) -> None:
    rig, value = decisions_rig, marker("stage")
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as alice:
        _, id = await left_held(client, alice, value)
        body = {"break_glass": True, "reason": "I am in a hurry"}
        refused: httpx2.Response = await decide(alice, id, "approve", **body)
        after = (await alice.get(f"/api/approvals/{id}")).json()
    assert refused.status_code == 403
    assert "may not break glass" in refused.json()["detail"]
    assert (after["state"], after["votes"]) == ("pending", [])
