"""A staged approval in traces: the hold span carries an event per vote (who, which stage, by
which channel) in the order they were cast, then the decision event, in both eras."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from approvals_e2e_support import agent_client, api_client, decide, pending_meta
from otlp_receiver import OTLPReceiver
from paths import TESTS
from support import serve_asgi
from trace_tree_support import approvals_traced_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

POLICY = str(TESTS / "gateway" / "telemetry" / "fixtures" / "spans_staged_policy.yaml")
AGENT_TOKEN = "spans-agent-token"
ALICE_TOKEN = "spans-alice-token"
CTO_TOKEN = "spans-cto-token"
AUTH = {
    "agents": [{"id": "agent:bot", "token": AGENT_TOKEN}],
    "approvers": [
        {"id": "user:alice", "token": ALICE_TOKEN, "roles": ["security"]},
        {"id": "user:cto", "token": CTO_TOKEN},
    ],
}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_vote_of_a_two_stage_approval_is_an_event_on_the_hold_span(
    mode: str, tmp_path: Path
) -> None:
    value = f"staged-{uuid.uuid4().hex}"
    async with OTLPReceiver() as receiver:
        config = approvals_traced_config(tmp_path, receiver.endpoint, AUTH, POLICY)
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base:
            async with agent_client(f"{base}/mcp", mode, token=AGENT_TOKEN) as agent:
                hold_at_once: Any = {"lockgate/hold": 0}
                held = await agent.call_tool("echo__echo", {"text": value}, meta=hold_at_once)
            approval_id = pending_meta(held)["id"]
            for token in (ALICE_TOKEN, CTO_TOKEN):
                async with api_client(base, token) as api:
                    response = await decide(api, approval_id, "approve")
                    assert response.status_code == 200, response.text
        hold = await receiver.wait_for_span(lambda s: s["name"] == "lockgate.hold")
    votes = [e["attributes"] for e in hold["events"] if e["name"] == "vote"]
    assert [(v["lockgate.approver"], v["lockgate.stage"]) for v in votes] == [
        ("user:alice", 0),
        ("user:cto", 1),
    ]
    assert all(v["lockgate.channel"] for v in votes)
    assert [e["name"] for e in hold["events"]] == ["vote", "vote", "decision"]
    assert hold["attributes"]["lockgate.approval.id"] == approval_id
    assert hold["attributes"]["lockgate.decision"] == "approve"
    assert hold["attributes"]["lockgate.approver"] == "user:cto"
    assert value.encode() not in receiver.payload
