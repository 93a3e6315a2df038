"""A held call in traces: answered pending, approved through the REST API, re-issued. The hold
span hangs under the first call's approval step with its decision event; the re-issued call's
server span links to the first trace and names the approval and its approver; every CloudEvent
of a call carries its trace."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from approvals_e2e_support import agent_client, api_client, decide, pending_meta, text_of
from otlp_receiver import OTLPReceiver
from paths import TESTS
from support import serve_asgi
from trace_tree_support import approvals_traced_config

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

POLICY = str(TESTS / "gateway" / "telemetry" / "fixtures" / "held_policy.yaml")
SERVER_SPAN = "tools/call echo__echo"
AGENT_TOKEN = "telemetry-agent-token"
ALICE_TOKEN = "telemetry-alice-token"
AUTH = {
    "agents": [{"id": "agent:bot", "token": AGENT_TOKEN}],
    "approvers": [{"id": "user:alice", "token": ALICE_TOKEN, "roles": ["security"]}],
}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_held_call_shows_its_hold_and_the_reissued_call_links_to_it(
    mode: str, tmp_path: Path
) -> None:
    value = f"held-{uuid.uuid4().hex}"
    events: list[Event] = []
    async with OTLPReceiver() as receiver:
        config = approvals_traced_config(tmp_path, receiver.endpoint, AUTH, POLICY)
        gateway = Gateway.from_config(config)
        gateway.parts.events.bus.add_listener(events.append)
        async with serve_asgi(build_app(gateway)) as base:
            url = f"{base}/mcp"
            async with (
                agent_client(url, mode, token=AGENT_TOKEN) as agent,
                api_client(base, ALICE_TOKEN) as api,
            ):
                held = await agent.call_tool(
                    "echo__echo", {"text": value}, meta={"lockgate/hold": 0}
                )
                approval_id = pending_meta(held)["id"]
                assert (await decide(api, approval_id, "approve")).status_code == 200
                ran = await agent.call_tool("echo__echo", {"text": value})
                assert value in text_of(ran)
        hold = await receiver.wait_for_span(lambda s: s["name"] == "lockgate.hold")
        second = await receiver.wait_for_span(lambda s: s["name"] == SERVER_SPAN and s["links"])
    first = next(s for s in receiver.spans if s["name"] == SERVER_SPAN and not s["links"])
    spans = receiver.spans
    approval_step = next(
        s for s in spans if s["trace_id"] == first["trace_id"] and s["name"] == "lockgate.approval"
    )
    # The hold: under the first call's approval step, from the request to the decision.
    assert hold["trace_id"] == first["trace_id"]
    assert hold["parent_span_id"] == approval_step["span_id"]
    assert hold["attributes"]["lockgate.approval.id"] == approval_id
    assert hold["attributes"]["lockgate.approver"] == "user:alice"
    assert hold["attributes"]["lockgate.decision"] == "approve"
    decision = [e for e in hold["events"] if e["name"] == "decision"]
    assert len(decision) == 1
    assert decision[0]["attributes"]["lockgate.approver"] == "user:alice"
    # The first call: held, answered pending.
    assert first["attributes"]["lockgate.decision.effect"] == "ask"
    assert first["attributes"]["lockgate.rule"] == "echo-held"
    assert first["attributes"]["lockgate.approval.id"] == approval_id
    # The re-issued call: its own trace, linked to the one that held it, and it ran upstream.
    assert second["trace_id"] != first["trace_id"]
    assert {"trace_id": first["trace_id"], "span_id": approval_step["span_id"]} in [
        {"trace_id": link["trace_id"], "span_id": link["span_id"]} for link in second["links"]
    ]
    assert second["attributes"]["lockgate.approval.id"] == approval_id
    assert second["attributes"]["lockgate.approver"] == "user:alice"
    assert any(s["trace_id"] == second["trace_id"] and s["kind"] == "CLIENT" for s in spans)
    assert value.encode() not in receiver.payload
    # CloudEvents of each call carry its trace (the traceparent extension).
    traced = {e.type: e.traceparent for e in events if e.traceparent}
    assert first["trace_id"] in traced["tool.approval.requested"]
    assert second["trace_id"] in traced["tool.result"]
    assert "traceparent" in next(e for e in events if e.type == "tool.result").to_cloudevent()
