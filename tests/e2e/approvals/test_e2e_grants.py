"""Grants over the REST API and the CLI, with real MCP clients of both eras waiting on held
calls: "approve for this session" and "approve this tool for a while", listed, revoked, refused
when the rule does not offer them, and on the audit log."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from approvals_e2e_support import (
    AGENT,
    ALICE,
    ALICE_TOKEN,
    BOB_TOKEN,
    OTHER_AGENT_TOKEN,
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
    HELD,
    NO_HOLD,
    audited,
    left_held,
    lockgate,
    lockgate_together,
    on_audit_log,
)
from support import MODES


async def _approved_with(rig: Rig, client: Any, value: str, grant: dict[str, Any]) -> str:
    """Hold ``client``'s call of ``value``, approve it with ``grant`` over the API; the grant id."""
    async with api_client(rig.base) as api:

        async def approve() -> dict[str, Any]:
            held = await wait_for_call(api, value)
            response = await decide(api, held["id"], "approve", grant=grant)
            assert response.status_code == 200, response.text
            return dict(response.json())

        with anyio.fail_after(20):
            result, decided = await while_held(
                lambda: client.call_tool(HELD, {"value": value}), approve
            )
    assert not result.is_error, result
    assert decided["state"] == "approved"
    return str(decided["grant_id"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_session_grant_lets_that_sessions_later_calls_run_and_only_those(
    decisions_rig: Rig, mode: str
) -> None:
    rig = decisions_rig
    first, later, other = (marker("session") for _ in range(3))
    async with agent_client(rig.mcp_url, mode, session=marker("a")) as client:
        grant = await _approved_with(rig, client, first, {"scope": "session"})
        with anyio.fail_after(30):
            ran = await client.call_tool(HELD, {"value": later})
    async with agent_client(rig.mcp_url, mode, session=marker("b")) as elsewhere:
        with anyio.fail_after(30):
            asked = await elsewhere.call_tool(HELD, {"value": other}, meta=NO_HOLD)
    assert grant.startswith("gr_")
    assert text_of(ran) == f"recorded {later}"
    assert pending_meta(ran) == {}  # never held
    assert pending_meta(asked)["state"] == "pending"
    assert [len(rig.executions(v)) for v in (first, later, other)] == [1, 1, 0]
    calls = await on_audit_log(rig.log.parent, "tool.call", lambda c: c["args"]["value"] == later)
    assert [c["decision"] for c in calls] == [
        {"effect": "ask", "rule_id": "session-grants", "grant": grant}
    ]


async def test_a_tool_grant_for_one_caller_is_listed_and_revoked_over_the_api(
    decisions_rig: Rig,
) -> None:
    rig = decisions_rig
    values = [marker("tool") for _ in range(4)]
    grant = {"scope": "tool", "duration": "10m", "principal": True}
    async with (
        agent_client(rig.mcp_url, "auto") as client,
        agent_client(rig.mcp_url, "auto", token=OTHER_AGENT_TOKEN) as other,
        api_client(rig.base) as alice,
        api_client(rig.base, BOB_TOKEN) as bob,
    ):
        id = await _approved_with(rig, client, values[0], grant)
        with anyio.fail_after(30):
            covered = await client.call_tool(HELD, {"value": values[1]})
            not_covered = await other.call_tool(HELD, {"value": values[2]}, meta=NO_HOLD)
        listed = (await alice.get("/api/grants")).json()["items"]
        hidden = (await bob.get("/api/grants")).json()["items"]
        bobs_revoke = await bob.post(f"/api/grants/{id}/revoke")
        revoked = await alice.post(f"/api/grants/{id}/revoke")
        twice = await alice.post(f"/api/grants/{id}/revoke")
        with anyio.fail_after(30):
            asked_again = await client.call_tool(HELD, {"value": values[3]}, meta=NO_HOLD)
        active = (await alice.get("/api/grants")).json()["items"]
        everything = (await alice.get("/api/grants", params={"all": "1"})).json()["items"]
    (mine,) = [g for g in listed if g["id"] == id]
    assert (mine["scope"], mine["tool"], mine["principal"]) == ("tool", HELD, AGENT)
    assert (mine["rule_id"], mine["created_by"], mine["session_id"]) == ("tool-grants", ALICE, None)
    assert mine["expires_at"] - mine["created_at"] == 600
    assert id not in [g["id"] for g in hidden]  # bob may not decide this rule's calls
    assert bobs_revoke.status_code == 404
    assert revoked.status_code == 200, revoked.text
    assert (revoked.json()["revoked_by"], twice.status_code) == (ALICE, 409)
    assert "revoked already" in twice.json()["detail"]
    assert not covered.is_error
    assert pending_meta(not_covered)["state"] == pending_meta(asked_again)["state"] == "pending"
    assert id not in [g["id"] for g in active]
    assert [g["revoked_by"] for g in everything if g["id"] == id] == [ALICE]
    created = audited(rig.log.parent, "tool.grant.created", id=id)
    gone = audited(rig.log.parent, "tool.grant.revoked", id=id)
    assert (len(created), [g["revoked_by"] for g in gone]) == (1, [ALICE])


@pytest.mark.parametrize(
    ("prefix", "body", "status", "detail"),
    [
        pytest.param(
            "once",
            {"grant": {"scope": "session"}},
            400,
            "rule once-only does not offer 'session' grants (it offers once)",
            id="not-offered",
        ),
        pytest.param(
            "tool",
            {"grant": {"scope": "tool", "duration": "2h"}},
            400,
            "rule tool-grants grants up to 30m (approval.grant_max)",
            id="above-grant-max",
        ),
        pytest.param(
            "tool",
            {"grant": {"scope": "tool", "duration": "soon"}},
            400,
            "grant.duration: invalid duration 'soon'",
            id="not-a-duration",
        ),
        pytest.param(
            "tool", {"grant": {"scope": "forever"}}, 422, "invalid_body", id="unknown-scope"
        ),
    ],
)
async def test_a_grant_the_rule_does_not_allow_is_a_clear_error_and_the_call_stays_held(
    decisions_rig: Rig, prefix: str, body: dict[str, Any], status: int, detail: str
) -> None:
    rig = decisions_rig
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as api:
        _, id = await left_held(client, api, marker(prefix))
        refused = await decide(api, id, "approve", **body)
        after = (await api.get(f"/api/approvals/{id}")).json()
    assert refused.status_code == status, refused.text
    assert detail in refused.text
    assert (after["state"], after["grant_id"]) == ("pending", None)


async def test_the_cli_approves_with_a_grant_lists_and_revokes_it(decisions_rig: Rig) -> None:
    rig = decisions_rig
    first, second = marker("cli"), marker("cli")
    async with agent_client(rig.mcp_url, "auto") as client, api_client(rig.base) as api:

        async def approve_with_cli() -> str:
            held = await wait_for_call(api, first)
            grant = ["--grant", "tool", "--for", "10m", "--principal"]
            done = await lockgate(rig, ALICE_TOKEN, "approvals", "approve", held["id"], *grant)
            assert done.returncode == 0, done.stderr
            return done.stdout

        with anyio.fail_after(60):
            held, approved = await while_held(
                lambda: client.call_tool(HELD, {"value": first}), approve_with_cli
            )
            ran = await client.call_tool(HELD, {"value": second})
        id = approved.split("; grant ")[1].split(" ")[0]
        listing, as_json = await lockgate_together(
            rig, (ALICE_TOKEN, "grants", "list"), (ALICE_TOKEN, "grants", "list", "--json")
        )
        revoked = await lockgate(rig, ALICE_TOKEN, "grants", "revoke", id)
        after = (await api.get("/api/grants", params={"all": "1"})).json()["items"]
    assert f"(lockgate grants revoke {id})" in approved
    assert (held.is_error, ran.is_error) == (False, False)
    header, *rows = listing.stdout.splitlines()
    assert header.split() == ["ID", "SCOPE", "TOOL", "FOR", "SESSION", "BY", "EXPIRES", "STATE"]
    assert [row.split()[:4] for row in rows if row.startswith(id)] == [[id, "tool", HELD, AGENT]]
    assert [g["principal"] for g in json.loads(as_json.stdout) if g["id"] == id] == [AGENT]
    assert (
        revoked.stdout == f"{id}: revoked (tool grant of {HELD}); the calls it covered ask again\n"
    )
    assert [g["revoked_by"] for g in after if g["id"] == id] == [ALICE]
