"""A LangGraph graph's held call in traces: the toolkit's call is held (the graph pauses), the
operator's resume decides it and the toolkit re-issues the call; the re-issued call's server
span links to the trace that held it and names the approval and its approver, in process (the
adapters' face, ``network.transport`` ``inproc``) and over HTTP in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import graph_tools
import pytest
from langgraph.types import Command
from lg_support import (
    AGENT_TOKENS,
    BACKENDS,
    OPS,
    OPS_TOKEN,
    POLICY,
    THREAD,
    agent_of,
    asks,
    interrupt_of,
    last_tool_message,
    tool_graph,
)
from otlp_receiver import OTLPReceiver
from support import echo_upstream, serve_asgi
from trace_tree_support import traced_config

from gateway.adapters.langchain import GatewayToolkit
from gateway.gateway import Gateway
from gateway.http.app import build_app

SERVER_SPAN = "tools/call local__transfer"
TRANSFER = {"account": "A1", "amount": 5}
APPROVER = "lockgate.approver"


@asynccontextmanager
async def toolkit_of(backend: str, config: Path) -> AsyncIterator[GatewayToolkit]:
    """The gateway's toolkit on ``backend``, deciding as the operator."""
    async with Gateway.from_config(config) as gateway:
        if backend == "inprocess":
            kit = GatewayToolkit.from_gateway(gateway, principal=agent_of(backend), approver=OPS)
            async with kit:
                yield kit
            return
        async with serve_asgi(build_app(gateway, manage_gateway=False)) as base:
            kit = GatewayToolkit.from_url(
                base,
                token=AGENT_TOKENS[backend],
                approver_token=OPS_TOKEN,
                mode="legacy" if backend == "http-legacy" else "auto",
            )
            async with kit:
                yield kit


@pytest.fixture(autouse=True)
def _fresh_tools() -> None:
    graph_tools.reset()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_resumed_graph_call_links_to_the_trace_that_held_it(
    backend: str, tmp_path: Path
) -> None:
    local = {"name": "local", "transport": "python", "functions": ["graph_tools:transfer"]}
    auth = {
        "agents": [{"id": agent_of(b).id, "token": t} for b, t in AGENT_TOKENS.items()],
        "approvers": [{"id": OPS.id, "token": OPS_TOKEN, "roles": ["ops"]}],
    }
    async with OTLPReceiver() as receiver:
        config = traced_config(
            tmp_path,
            receiver.endpoint,
            [echo_upstream("echo"), local],
            policies={"files": [str(POLICY)]},
            approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
            auth=auth,
        )
        async with toolkit_of(backend, config) as kit:
            graph = tool_graph(await kit.aget_tools())
            with anyio.fail_after(30):
                state = await graph.ainvoke(asks("local__transfer", TRANSFER), THREAD)
                approval = interrupt_of(state)["lockgate"]["approval_id"]
                state = await graph.ainvoke(Command(resume={"type": "accept"}), THREAD)
        assert last_tool_message(state).status == "success"
        resumed = await receiver.wait_for_span(  # the re-issued call that ran (decided)
            lambda s: s["name"] == SERVER_SPAN and s["links"] and s["attributes"].get(APPROVER)
        )
        hold = await receiver.wait_for_span(lambda s: s["name"] == "lockgate.hold")
    spans = receiver.spans
    held = next(s for s in spans if s["name"] == SERVER_SPAN and s["trace_id"] == hold["trace_id"])
    step = next(s for s in spans if s["span_id"] == hold["parent_span_id"])
    assert step["name"] == "lockgate.approval"
    assert held["attributes"]["lockgate.approval.id"] == approval
    assert held["attributes"]["lockgate.decision.effect"] == "ask"
    transport = "inproc" if backend == "inprocess" else "tcp"
    assert held["attributes"]["network.transport"] == transport
    assert resumed["trace_id"] != hold["trace_id"]
    links = [(link["trace_id"], link["span_id"]) for link in resumed["links"]]
    assert links.count((hold["trace_id"], step["span_id"])) == 1  # linked once
    assert resumed["attributes"]["lockgate.approval.id"] == approval
    assert resumed["attributes"][APPROVER] == OPS.id
    assert graph_tools.EXECUTED == [("transfer", {**TRANSFER, "currency": "EUR"})]
