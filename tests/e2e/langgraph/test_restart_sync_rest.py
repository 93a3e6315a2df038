"""LangGraph review across a gateway restart, sync tools (portals), and the REST API's LangGraph
shapes (``?format=langgraph``)."""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread
import graph_tools
import pytest
from anyio.from_thread import start_blocking_portal
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from lg_support import (
    AGENT_TOKENS,
    OPS,
    OPS_TOKEN,
    THREAD,
    agent_of,
    asks,
    interrupt_of,
    last_tool_message,
    rest,
    tool_graph,
)

from gateway.adapters.langchain import GatewayToolkit
from gateway.gateway import Gateway

TRANSFER = {"account": "A1", "amount": 5}
RAN = [("transfer", {**TRANSFER, "currency": "EUR"})]


async def test_a_restart_between_interrupt_and_resume_keeps_the_pending_call(
    graph_config: Path,
) -> None:
    saver = InMemorySaver()
    async with Gateway.from_config(graph_config) as first:
        kit = GatewayToolkit.from_gateway(first, principal=agent_of("inprocess"), approver=OPS)
        graph = tool_graph(await kit.aget_tools(), saver)
        approval = interrupt_of(await graph.ainvoke(asks("local__transfer", TRANSFER), THREAD))
    async with Gateway.from_config(graph_config) as second:
        kit = GatewayToolkit.from_gateway(second, principal=agent_of("inprocess"), approver=OPS)
        graph = tool_graph(await kit.aget_tools(), saver)
        state = await graph.ainvoke(Command(resume={"type": "accept"}), THREAD)
        record = await second.store.get(approval["lockgate"]["approval_id"])
    assert last_tool_message(state).status == "success"
    assert graph_tools.EXECUTED == RAN
    assert record is not None
    assert (record.state, record.channel, record.decided_by) == ("done", "langgraph", OPS.id)


def test_sync_tools_of_an_in_process_gateway_run_through_its_portal(graph_config: Path) -> None:
    with start_blocking_portal() as portal:
        opened = portal.wrap_async_context_manager(Gateway.from_config(graph_config))
        with opened as gateway:
            kit = GatewayToolkit.from_gateway(
                gateway, principal=agent_of("inprocess"), approver=OPS, portal=portal
            )
            graph = tool_graph(kit.get_tools())
            state = graph.invoke(asks("local__transfer", TRANSFER), THREAD)
            assert interrupt_of(state)["action_request"]["action"] == "local__transfer"
            state = graph.invoke(Command(resume={"type": "accept"}), THREAD)
    assert last_tool_message(state).status == "success"
    assert graph_tools.EXECUTED == RAN


def test_sync_use_without_a_portal_is_a_clear_error() -> None:
    kit = GatewayToolkit.from_url("http://127.0.0.1:9")
    with pytest.raises(RuntimeError, match="needs a portal"):
        kit.get_tools()


async def test_a_remote_toolkit_opened_with_with_runs_sync_tools(gateway_url: str) -> None:
    def run_graph() -> str:
        with GatewayToolkit.from_url(
            gateway_url, token=AGENT_TOKENS["http-modern"], approver_token=OPS_TOKEN
        ) as kit:
            graph = tool_graph(kit.get_tools())
            graph.invoke(asks("local__transfer", TRANSFER), THREAD)
            state = graph.invoke(
                Command(resume={"type": "edit", "args": {**TRANSFER, "amount": 9}}), THREAD
            )
            return str(last_tool_message(state).content)

    content = await anyio.to_thread.run_sync(run_graph)
    assert '"amount": 9' in content
    assert graph_tools.EXECUTED == [("transfer", {**TRANSFER, "amount": 9, "currency": "EUR"})]


async def test_the_rest_api_speaks_the_interrupt_shapes(gateway: Gateway, gateway_url: str) -> None:
    kit = GatewayToolkit.from_gateway(gateway, principal=agent_of("inprocess"))
    graph = tool_graph(await kit.aget_tools())
    paused = interrupt_of(await graph.ainvoke(asks("local__transfer", TRANSFER), THREAD))
    approval_id = paused["lockgate"]["approval_id"]
    shaped = await rest(gateway_url, "GET", f"/approvals/{approval_id}", format="langgraph")
    assert shaped.json() == paused
    listed = await rest(gateway_url, "GET", "/approvals", format="langgraph")
    assert listed.json()["items"] == [paused]
    bad = await rest(gateway_url, "GET", f"/approvals/{approval_id}", format="inbox")
    assert bad.status_code == 400
    path = f"/approvals/{approval_id}/decision"
    unknown = await rest(gateway_url, "POST", path, {"type": "maybe"}, format="langgraph")
    assert (unknown.status_code, unknown.json()["detail"]) == (400, "unknown response type 'maybe'")
    edit = {"type": "edit", "args": {"account": "C3", "amount": 2}}
    decided = await rest(gateway_url, "POST", path, [edit], format="langgraph")
    assert decided.status_code == 200
    assert (decided.json()["state"], decided.json()["override_args"]) == ("approved", edit["args"])
    state = await graph.ainvoke(Command(resume={"type": "accept"}), THREAD)
    assert last_tool_message(state).artifact["account"] == "C3"
    assert graph_tools.EXECUTED == [("transfer", {"account": "C3", "amount": 2, "currency": "EUR"})]
