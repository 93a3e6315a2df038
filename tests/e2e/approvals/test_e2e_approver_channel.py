"""An approver decides held calls over the REST API (and the CLI) while an MCP client waits.

Every test holds a real call from an `mcp.Client` (legacy 2025-11-25 and 2026-07-28 eras), finds
it on ``GET /api/approvals``, decides it as ``user:alice`` (role ``security``), and counts the
recorder upstream's executions.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import (
    AGENT,
    ALICE,
    ALICE_TOKEN,
    BOB_TOKEN,
    INTERN_TOKEN,
    OTHER_AGENT,
    OTHER_AGENT_TOKEN,
    Rig,
    agent_client,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
    wait_for_state,
    while_held,
)
from support import MODES

both_eras = pytest.mark.parametrize("mode", MODES)

HELD = "recorder__record"
BRIEF = "recorder__record_brief"


def _args(value: str) -> dict[str, Any]:
    # Unicode (including an invisible right-to-left override), nesting, numbers and an empty
    # string: what the upstream receives must be exactly this.
    return {
        "value": value,
        "count": 3,
        "tags": ["naïve", "\u202eevil", "", "日本"],
        "meta": {"nested": {"pi": 3.25, "list": [1, None, True]}, "empty": {}},
    }


@both_eras
async def test_an_approved_held_call_runs_once_with_byte_identical_arguments(
    rig: Rig, mode: str
) -> None:
    value = marker("approve")
    args = _args(value)
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def approve() -> dict[str, Any]:
            held = await wait_for_call(api, value)
            assert rig.executions(value) == []  # held: the upstream has not seen it
            response = await decide(api, held["id"], "approve")
            assert response.status_code == 200, response.text
            return held

        with anyio.fail_after(20):
            result, held = await while_held(lambda: client.call_tool(HELD, args), approve)
        record = (await api.get(f"/api/approvals/{held['id']}")).json()

    assert not result.is_error, result
    assert text_of(result) == f"recorded {value}"
    assert held["args"] == args
    assert held["principal"] == AGENT
    assert held["tool"] == HELD
    assert held["rule_id"] == "held-for-security"
    assert held["reason"] == "recording needs a security approver"
    assert held["kind"] == "approval"
    sent = json.dumps(args, sort_keys=True, ensure_ascii=False)
    [received] = rig.executions(value)
    assert json.dumps(received, sort_keys=True, ensure_ascii=False) == sent
    assert record["state"] == "done"
    assert record["decision"] == "approve"
    assert record["decided_by"] == ALICE
    assert record["channel"] == "api"


@both_eras
async def test_a_denied_held_call_never_reaches_the_upstream_and_the_model_reads_why(
    rig: Rig, mode: str
) -> None:
    value = marker("deny")
    message = "Not today: use the staging recorder instead."
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def deny() -> str:
            held = await wait_for_call(api, value)
            response = await decide(api, held["id"], "deny", message=message)
            assert response.status_code == 200, response.text
            assert response.json()["state"] == "denied"
            return str(held["id"])

        with anyio.fail_after(20):
            result, id = await while_held(lambda: client.call_tool(HELD, {"value": value}), deny)

    assert result.is_error
    assert text_of(result) == message
    assert pending_meta(result) == {"id": id, "state": "denied"}
    assert rig.executions(value) == []


@both_eras
async def test_edits_are_revalidated_and_reevaluated_and_only_a_valid_edit_runs(
    rig: Rig, mode: str
) -> None:
    value = marker("edit")
    edited = {"value": f"{value}-edited", "count": 2, "tags": ["reviewed"]}
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def edit() -> list[httpx2.Response]:
            held = await wait_for_call(api, value)
            id = held["id"]
            schema = await decide(api, id, "edit", args={"value": value, "count": -1})
            policy = await decide(api, id, "edit", args={"value": "rm all records"})
            still = (await api.get(f"/api/approvals/{id}")).json()
            assert still["state"] == "pending"
            valid = await decide(api, id, "edit", args=edited)
            return [schema, policy, valid]

        with anyio.fail_after(20):
            result, (schema, policy, valid) = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), edit
            )

    assert schema.status_code == 422, schema.text
    assert schema.json()["error"] == "refused"
    assert "count" in schema.json()["detail"]
    assert policy.status_code == 422, policy.text
    assert policy.json()["error"] == "refused"
    assert "polic" in policy.json()["detail"]
    assert valid.status_code == 200, valid.text
    assert valid.json()["override_args"] == edited
    assert not result.is_error, result
    assert text_of(result) == f"recorded {value}-edited"
    assert rig.executions(value) == []
    assert rig.executions(f"{value}-edited") == [edited]
    assert rig.executions("rm all records") == []


@both_eras
async def test_respond_answers_with_the_approvers_text_and_never_runs_the_tool(
    rig: Rig, mode: str
) -> None:
    value = marker("respond")
    answer = "Already recorded yesterday; nothing to do."
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def respond() -> httpx2.Response:
            held = await wait_for_call(api, value)
            return await decide(api, held["id"], "respond", message=answer)

        with anyio.fail_after(20):
            result, response = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), respond
            )

    assert response.status_code == 200, response.text
    assert response.json()["state"] == "done"
    assert not result.is_error
    assert text_of(result) == answer
    assert rig.executions(value) == []


@both_eras
async def test_a_second_decision_on_a_decided_call_conflicts(rig: Rig, mode: str) -> None:
    value = marker("twice")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def approve_twice() -> list[httpx2.Response]:
            held = await wait_for_call(api, value)
            first = await decide(api, held["id"], "approve")
            second = await decide(api, held["id"], "approve")
            third = await decide(api, held["id"], "deny", message="too late")
            return [first, second, third]

        with anyio.fail_after(20):
            result, (first, second, third) = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), approve_twice
            )

    assert first.status_code == 200
    assert second.status_code == 409, second.text
    assert second.json()["error"] == "conflict"
    assert third.status_code == 409, third.text
    assert not result.is_error
    assert len(rig.executions(value)) == 1


@both_eras
async def test_twenty_concurrent_decisions_have_exactly_one_winner(rig: Rig, mode: str) -> None:
    value = marker("race")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            first = await client.call_tool(BRIEF, {"value": value})
        id = pending_meta(first)["id"]
        statuses: dict[int, tuple[str, int]] = {}

        async def post(index: int) -> None:
            decision = "approve" if index % 2 else "deny"
            response = await decide(api, id, decision, message=f"deny #{index}")
            statuses[index] = (decision, response.status_code)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for index in range(20):
                    tg.start_soon(post, index)
            again = await client.call_tool(BRIEF, {"value": value})

    winners = [decision for decision, status in statuses.values() if status == 200]
    assert len(winners) == 1, statuses
    assert sorted(status for _, status in statuses.values()) == [200] + [409] * 19
    if winners == ["approve"]:
        assert not again.is_error
        assert len(rig.executions(value)) == 1
    else:
        assert again.is_error
        assert text_of(again).startswith("deny #")
        assert rig.executions(value) == []


@both_eras
async def test_expiry_is_its_own_state_and_a_later_decision_conflicts(rig: Rig, mode: str) -> None:
    value = marker("expire")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            # expires after 1 s, held up to 10 s: the hold ends when the call expires
            result = await client.call_tool("recorder__record_expiring", {"value": value})
        meta = pending_meta(result)
        record = (await api.get(f"/api/approvals/{meta['id']}")).json()
        late = await decide(api, meta["id"], "approve")

    assert result.is_error
    assert "expired" in text_of(result)
    assert meta["state"] == "expired"
    assert record["state"] == "expired"
    assert record["decision"] != "deny"
    assert late.status_code == 409, late.text
    assert late.json()["state"] == "expired"
    assert rig.executions(value) == []


@both_eras
async def test_a_call_past_its_hold_is_pending_and_runs_once_when_reissued_after_approval(
    rig: Rig, mode: str
) -> None:
    value = marker("hold")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            first = await client.call_tool(BRIEF, {"value": value})
            meta = pending_meta(first)
            still = await client.call_tool(BRIEF, {"value": value})
            approved = await decide(api, meta["id"], "approve")
            runs = await client.call_tool(BRIEF, {"value": value})
            executed = rig.executions(value)
            third = await client.call_tool(BRIEF, {"value": value})
        record = (await api.get(f"/api/approvals/{meta['id']}")).json()

    assert first.is_error
    assert meta["kind"] == "approval"
    assert meta["state"] == "pending"
    assert meta["id"].startswith("ap_")
    assert text_of(first).startswith("Not executed yet")
    assert f"(approval id {meta['id']})" in text_of(first)
    assert pending_meta(still) == meta  # re-issued while pending: held again, same call
    assert approved.status_code == 200, approved.text
    assert not runs.is_error
    assert text_of(runs) == f"recorded {value}"
    assert executed == [{"value": value}]
    assert record["state"] == "done"
    assert record["delivered"] is True
    # the outcome was delivered: an identical call now is a new request
    assert pending_meta(third)["state"] == "pending"
    assert pending_meta(third)["id"] != meta["id"]
    assert rig.executions(value) == [{"value": value}]


@both_eras
async def test_progress_names_the_approval_while_the_call_is_held(rig: Rig, mode: str) -> None:
    value = marker("progress")
    messages: list[str] = []
    seen = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        seen.set()

    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def approve_from_progress() -> str:
            await seen.wait()
            id = messages[0].removeprefix("awaiting approval ")
            response = await decide(api, id, "approve")
            assert response.status_code == 200, response.text
            return id

        with anyio.fail_after(20):
            result, id = await while_held(
                lambda: client.call_tool(HELD, {"value": value}, progress_callback=on_progress),
                approve_from_progress,
            )

    assert id.startswith("ap_")
    assert all(m == f"awaiting approval {id}" for m in messages)
    assert not result.is_error
    assert len(rig.executions(value)) == 1


@both_eras
async def test_a_cancelled_held_call_is_withdrawn_and_cannot_be_approved(
    rig: Rig, mode: str
) -> None:
    value = marker("cancel")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, HELD, {"value": value})
                held = await wait_for_call(api, value)
                tg.cancel_scope.cancel()
            record = await wait_for_state(api, held["id"], "cancelled")
            late = await decide(api, held["id"], "approve")
            # the session survives the cancel and an identical call is a new request
            again = await client.call_tool(BRIEF, {"value": value})

    assert record["decision"] == "cancel"
    assert late.status_code == 409, late.text
    assert late.json()["state"] == "cancelled"
    assert pending_meta(again)["state"] == "pending"
    assert rig.executions(value) == []


@both_eras
async def test_only_the_rules_approvers_may_see_and_decide(rig: Rig, mode: str) -> None:
    value = marker("forbidden")
    async with agent_client(rig.mcp_url, mode) as client:
        with anyio.fail_after(20):
            first = await client.call_tool(BRIEF, {"value": value})
        id = pending_meta(first)["id"]
        async with api_client(rig.base, BOB_TOKEN) as bob:
            listed = await bob.get("/api/approvals", params={"state": "pending"})
            read = await bob.get(f"/api/approvals/{id}")
            refused = await decide(bob, id, "approve")
        async with api_client(rig.base, ALICE_TOKEN) as alice:
            record = (await alice.get(f"/api/approvals/{id}")).json()
            alices = (await alice.get("/api/approvals", params={"state": "pending"})).json()

    # Bob is an approver, not of this rule: the call is not there for him (not even a 403).
    assert listed.status_code == 200
    assert id not in [call["id"] for call in listed.json()["items"]]
    assert read.status_code == 404
    assert refused.status_code == 404, refused.text
    assert id in [call["id"] for call in alices["items"]]
    assert record["state"] == "pending"
    assert rig.executions(value) == []


async def test_the_cli_lists_and_approves_a_held_call(rig: Rig) -> None:
    value = marker("cli")
    cli = [sys.executable, "-m", "gateway.cli", "approvals"]
    auth = ["--url", rig.base, "--token", ALICE_TOKEN]
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as api:

        async def approve_with_cli() -> tuple[str, str, str]:
            held = await wait_for_call(api, value)
            listing = await anyio.run_process([*cli, "list", "--tool", HELD, *auth], check=False)
            shown = await anyio.run_process([*cli, "show", held["id"], *auth], check=False)
            approved = await anyio.run_process([*cli, "approve", held["id"], *auth], check=False)
            assert listing.returncode == 0, listing.stderr
            assert approved.returncode == 0, approved.stderr
            return held["id"], listing.stdout.decode(), shown.stdout.decode()

        with anyio.fail_after(100):  # three CLI process starts: slow on a loaded machine
            result, (id, listing, shown) = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), approve_with_cli
            )
            if pending_meta(result):  # three CLI starts outlasted the hold: re-issue, runs once
                result = await client.call_tool(HELD, {"value": value})
        record = (await api.get(f"/api/approvals/{id}")).json()
        empty = await anyio.run_process([*cli, "list", "--tool", HELD, *auth], check=False)
        # A reader that stops early (``| head``) gets no traceback.
        piped = await anyio.run_process(
            f"{shlex.join([*cli, 'list', '--state', 'done', '--json', *auth])} | head -c 10",
            check=False,
        )

    header, row = listing.splitlines()
    assert header.split() == ["ID", "STATE", "TOOL", "CALLER", "REQUESTED", "EXPIRES", "ARGS"]
    assert row.startswith(f"{id}  pending  {HELD}")
    assert re.search(r"  \d+s ago +in \d+[ms]  ", row)  # requested seconds ago, expires later
    assert shown.startswith(f"{id}\n  state      pending, ")  # for people: labelled lines
    assert re.search(r"\n  requested  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", shown)
    assert re.search(r"pending, \d+[ms] left", shown)
    assert empty.stdout.decode() == f"no pending approvals of {HELD}\n"
    assert b"Traceback" not in piped.stderr
    assert id in listing
    assert not result.is_error
    assert record["channel"] == "cli"
    assert record["decided_by"] == ALICE
    assert len(rig.executions(value)) == 1


async def test_a_call_nobody_holds_expires_on_its_own_and_cannot_be_decided(rig: Rig) -> None:
    value = marker("lapse")
    async with (
        agent_client(rig.mcp_url, "auto") as client,
        api_client(rig.base) as api,
        rig.gateway.events.subscribe(["tool.approval.resolved"]) as resolutions,
    ):
        with anyio.fail_after(20):
            # held 200 ms, so answered "pending"; nobody holds it when it expires after 1 s
            first = await client.call_tool("recorder__record_lapse", {"value": value})
        id = pending_meta(first)["id"]
        # the gateway's sweeper records the expiry within its interval (5 s), and announces it
        record = await wait_for_state(api, id, "expired", timeout=30)
        with anyio.fail_after(30):
            async for announced in resolutions:
                if announced.data["approval_id"] == id:
                    break
        listed = await api.get("/api/approvals", params={"state": "pending"})
        late = await decide(api, id, "approve")

    assert record["decision"] == "expire"
    assert announced.data["decision"] == "expire"
    assert id not in [c["id"] for c in listed.json()["items"]]
    assert late.status_code == 409, late.text
    assert rig.executions(value) == []


@both_eras
async def test_two_identical_held_calls_share_one_approval_and_one_execution(
    rig: Rig, mode: str
) -> None:
    value = marker("twin")
    results: list[Any] = []
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:

        async def call() -> None:
            results.append(await client.call_tool(HELD, {"value": value}))

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                held = await wait_for_call(api, value)
                tg.start_soon(call)
                # the second call joins the same pending call (no second approval request)
                await anyio.wait_all_tasks_blocked()
                listed = await api.get("/api/approvals", params={"state": "pending"})
                response = await decide(api, held["id"], "approve")

    same = [c for c in listed.json()["items"] if c["args"].get("value") == value]
    assert [c["id"] for c in same] == [held["id"]]
    assert response.status_code == 200
    assert [r.is_error for r in results] == [False, False]
    assert [text_of(r) for r in results] == [f"recorded {value}"] * 2
    assert rig.executions(value) == [{"value": value}]


@both_eras
async def test_an_approval_never_runs_an_identical_call_of_another_agent(
    rig: Rig, mode: str
) -> None:
    value = marker("not-yours")
    async with (
        agent_client(rig.mcp_url, mode) as client,
        agent_client(rig.mcp_url, mode, token=OTHER_AGENT_TOKEN) as other,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            first = await client.call_tool(BRIEF, {"value": value})
            id = pending_meta(first)["id"]
            assert (await decide(api, id, "approve")).status_code == 200
            theirs = await other.call_tool(BRIEF, {"value": value})
            executed_before = rig.executions(value)
            mine = await client.call_tool(BRIEF, {"value": value})
        their_record = (await api.get(f"/api/approvals/{pending_meta(theirs)['id']}")).json()

    assert pending_meta(theirs)["state"] == "pending"
    assert pending_meta(theirs)["id"] != id
    assert their_record["principal"] == OTHER_AGENT
    assert executed_before == []
    assert not mine.is_error
    assert rig.executions(value) == [{"value": value}]


async def test_a_decision_the_rule_does_not_offer_is_refused(rig: Rig) -> None:
    value = marker("not-offered")
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            first = await client.call_tool(BRIEF, {"value": value})  # decisions: approve, deny
        id = pending_meta(first)["id"]
        edit = await decide(api, id, "edit", args={"value": f"{value}-edited"})
        respond = await decide(api, id, "respond", message="done already")
        unknown = await decide(api, id, "ignore")
        record = (await api.get(f"/api/approvals/{id}")).json()

    assert edit.status_code == 422, edit.text
    assert respond.status_code == 422, respond.text
    assert unknown.status_code == 422, unknown.text
    assert record["state"] == "pending"
    assert rig.executions(f"{value}-edited") == []


@both_eras
async def test_an_edit_is_refused_when_the_policy_denies_it_for_the_calling_agents_role(
    rig: Rig, mode: str
) -> None:
    value = marker("dev")
    production = f"prod-{value}"
    async with (
        agent_client(rig.mcp_url, mode, token=INTERN_TOKEN) as intern,
        api_client(rig.base) as api,
    ):
        with anyio.fail_after(20):
            direct = await intern.call_tool(BRIEF, {"value": production})

            async def edit_to_production() -> httpx2.Response:
                held = await wait_for_call(api, value)
                edit = await decide(api, held["id"], "edit", args={"value": production})
                if edit.status_code != 200:  # refused, as it should be: release the hold
                    await decide(api, held["id"], "deny", message="refused edit")
                return edit

            result, edit = await while_held(
                lambda: intern.call_tool(HELD, {"value": value}), edit_to_production
            )

    assert text_of(direct) == "Interns may not record production values."
    assert edit.status_code == 422, edit.text
    assert result.is_error
    assert rig.executions(production) == []
