"""What never becomes a pending call, and who may not decide one.

Bad arguments are refused before the policy (an error naming the path, nothing held); a hidden
tool is an unknown tool; a denied tool answers with the rule's message; agent and worker
credentials cannot approve, and approver credentials cannot call tools.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from approvals_e2e_support import (
    AGENT_TOKEN,
    ALICE_TOKEN,
    WORKER_TOKEN,
    Rig,
    agent_client,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
)
from mcp.shared.exceptions import MCPError
from support import MODES

both_eras = pytest.mark.parametrize("mode", MODES)
HELD = "recorder__record"


@both_eras
@pytest.mark.parametrize(
    ("extra", "path"),
    [
        pytest.param({"tags": ["fine", 7]}, "tags/1", id="nested-item"),
        pytest.param({"count": "three"}, "count", id="wrong-type"),
        pytest.param({"count": -1}, "count", id="below-minimum"),
        pytest.param({"surprise": True}, "(root)", id="unexpected-field"),
    ],
)
async def test_bad_arguments_are_refused_naming_the_path_and_nothing_is_held(
    rig: Rig, mode: str, extra: dict[str, Any], path: str
) -> None:
    value = marker("bad-args")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base) as api:
        with anyio.fail_after(20):
            result = await client.call_tool(HELD, {"value": value, **extra})
        listed = await api.get("/api/approvals", params={"tool": HELD, "limit": "1000"})

    assert result.is_error
    assert text_of(result).startswith(f"Invalid arguments for tool {HELD!r}: {path}: ")
    assert pending_meta(result) == {}
    assert listed.status_code == 200
    assert [c for c in listed.json()["items"] if c["args"].get("value") == value] == []
    assert rig.executions(value) == []


@both_eras
async def test_a_missing_required_argument_is_refused_before_any_approval(
    rig: Rig, mode: str
) -> None:
    async with agent_client(rig.mcp_url, mode) as client:
        with anyio.fail_after(20):
            result = await client.call_tool(HELD, {"count": 1})

    assert result.is_error
    assert "(root)" in text_of(result)
    assert "value" in text_of(result)
    assert pending_meta(result) == {}


@both_eras
async def test_a_hidden_tool_is_neither_listed_nor_callable_like_an_unknown_tool(
    rig: Rig, mode: str
) -> None:
    value = marker("hidden")
    async with agent_client(rig.mcp_url, mode) as client:
        with anyio.fail_after(20):
            names = {tool.name for tool in (await client.list_tools()).tools}
            with pytest.raises(MCPError) as hidden:
                await client.call_tool("recorder__record_hidden", {"value": value})
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("recorder__record_nowhere", {"value": value})

    assert "recorder__record_hidden" not in names
    assert "recorder__record" in names
    assert hidden.value.code == unknown.value.code
    assert str(hidden.value.error.message).replace("record_hidden", "X") == str(
        unknown.value.error.message
    ).replace("record_nowhere", "X")
    assert rig.executions(value) == []


@both_eras
async def test_a_denied_tool_answers_with_the_rules_message_and_holds_nothing(
    rig: Rig, mode: str
) -> None:
    value = marker("denied")
    async with agent_client(rig.mcp_url, mode) as client:
        with anyio.fail_after(20):
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("recorder__record_denied", {"value": value})
            removal = await client.call_tool(HELD, {"value": "rm every record"})

    assert "recorder__record_denied" in names  # deny is visible; only hide hides
    assert result.is_error
    assert text_of(result) == "This recorder is closed; do not retry."
    assert pending_meta(result) == {}
    assert removal.is_error
    assert text_of(removal) == "Removing records is not allowed through this gateway."
    assert rig.executions(value) == []
    assert rig.executions("rm every record") == []


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(AGENT_TOKEN, id="agent-token"),
        pytest.param(WORKER_TOKEN, id="worker-token"),
        pytest.param(None, id="no-token"),
        pytest.param("not-a-token", id="unknown-token"),
    ],
)
async def test_only_an_approver_token_reaches_the_approvals_api(
    rig: Rig, token: str | None
) -> None:
    value = marker("who-decides")
    async with agent_client(rig.mcp_url, "auto") as client:
        with anyio.fail_after(20):
            first = await client.call_tool("recorder__record_brief", {"value": value})
    id = pending_meta(first)["id"]
    async with api_client(rig.base, token) as intruder, api_client(rig.base) as alice:
        responses = [
            await intruder.get("/api/approvals", params={"state": "pending"}),
            await intruder.get(f"/api/approvals/{id}"),
            await decide(intruder, id, "approve"),
            await decide(intruder, id, "deny", message="self-service"),
        ]
        record = (await alice.get(f"/api/approvals/{id}")).json()

    # A token the gateway knows (agent, worker) is authenticated but not an approver: 403.
    known = token in {AGENT_TOKEN, WORKER_TOKEN}
    assert [r.status_code for r in responses] == [403 if known else 401] * 4
    if not known:
        assert all(r.headers["www-authenticate"].startswith("Bearer") for r in responses)
    assert record["state"] == "pending"
    assert record["decided_by"] is None
    assert rig.executions(value) == []


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(AGENT_TOKEN, id="agent-token"),
        pytest.param(None, id="no-token"),
    ],
)
async def test_only_workers_and_approvers_reach_the_calls_api(rig: Rig, token: str | None) -> None:
    async with api_client(rig.base, token) as intruder:
        listed = await intruder.get("/api/calls", params={"state": "pending"})
        posted = await intruder.post("/api/calls/ap_whatever/result", json={"value": 1})

    assert listed.status_code == posted.status_code == (403 if token else 401)


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(ALICE_TOKEN, id="approver-token"),
        pytest.param(WORKER_TOKEN, id="worker-token"),
        pytest.param(None, id="no-token"),
    ],
)
async def test_only_an_agent_token_reaches_mcp(rig: Rig, token: str | None) -> None:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        **({"Authorization": f"Bearer {token}"} if token else {}),
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "intruder", "version": "0"},
        },
    }
    async with api_client(rig.base, None) as http:
        response = await http.post("/mcp", json=body, headers=headers)

    assert response.status_code == 401


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(AGENT_TOKEN, id="agent-token"),
        pytest.param(WORKER_TOKEN, id="worker-token"),
    ],
)
async def test_agents_and_workers_cannot_watch_the_approval_events(rig: Rig, token: str) -> None:
    async with api_client(rig.base, token) as intruder:
        response = await intruder.get("/api/events")

    assert response.status_code == 403
    assert response.json()["detail"] == "this token is not a subscriber or approver token"


async def test_an_unknown_approval_is_not_found(rig: Rig) -> None:
    async with api_client(rig.base) as api:
        shown = await api.get("/api/approvals/ap_doesnotexist")
        decided = await decide(api, "ap_doesnotexist", "approve")

    assert shown.status_code == 404
    assert decided.status_code == 404


async def test_a_malformed_listing_query_is_a_client_error(rig: Rig) -> None:
    async with api_client(rig.base) as api:
        response = await api.get("/api/approvals", params={"limit": "abc"})

    assert 400 <= response.status_code < 500
