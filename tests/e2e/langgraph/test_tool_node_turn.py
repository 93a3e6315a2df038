"""A plain LangGraph graph (no ``create_agent``) built on a ``ToolNode``: with the lockgate
middleware's `tool_node` and `review_node`, the held calls of one AI message are one interrupt in
``HumanInTheLoopMiddleware``'s shape, resumed with one batched reply; allowed calls run once. A
plain ``ToolNode(tools)`` keeps asking each held call on its own, in the single-action shape.
Real graphs against a real gateway, in process and over HTTP in both MCP eras."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import graph_tools
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from lg_support import AGENT_TOKENS, OPS_TOKEN, THREAD, Toolkits, interrupt_of, tool_graph

from gateway.adapters.langchain import GatewayToolkit
from gateway.adapters.middleware import LockgateMiddleware

TO_A1 = {"account": "A1", "amount": 5}
TO_B2 = {"account": "B2", "amount": 7}
OTHER_THREAD = {"configurable": {"thread_id": "t2"}}


def reviewed_graph(kit: GatewayToolkit, tools: Sequence[BaseTool]) -> Any:
    """START -> tools (a ToolNode) -> review -> END, checkpointed in memory."""
    review = LockgateMiddleware(kit)
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("tools", review.tool_node(tools))
    builder.add_node("review", review.review_node())
    builder.add_edge(START, "tools")
    builder.add_edge("tools", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=InMemorySaver())


def turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """Graph input: one AI message making ``calls`` (ids c1, c2, ...)."""
    tool_calls = [
        {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(calls, 1)
    ]
    return {"messages": [AIMessage(content="", tool_calls=tool_calls)]}


def tool_messages(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


TURN = turn(("local__transfer", TO_A1), ("local__note", {"text": "hi"}), ("local__transfer", TO_B2))


async def test_the_held_calls_of_one_ai_message_are_one_interrupt_and_one_batched_reply(
    toolkit: Toolkits,
) -> None:
    async with toolkit() as kit:
        graph = reviewed_graph(kit, await kit.aget_tools())
        plain = await graph.ainvoke(turn(("local__note", {"text": "plain"})), OTHER_THREAD)
        assert "__interrupt__" not in plain  # nothing held: the review node passes
        assert tool_messages(plain)["c1"].content == "plain"
        state = await graph.ainvoke(TURN, THREAD)
        assert tool_messages(state)["c2"].content == "hi"  # allowed: ran, not asked about
        request = interrupt_of(state)  # exactly one interrupt for the two held calls
        assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
            ("local__transfer", TO_A1),
            ("local__transfer", TO_B2),
        ]
        assert [c["action_name"] for c in request["review_configs"]] == 2 * ["local__transfer"]
        assert len(request["lockgate"]) == 2
        assert not [e for e in graph_tools.EXECUTED if e[0] == "transfer"]
        reply = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "Not B2."}]}
        state = await graph.ainvoke(Command(resume=reply), THREAD)
    transfers = [e for e in graph_tools.EXECUTED if e[0] == "transfer"]
    assert transfers == [("transfer", {**TO_A1, "currency": "EUR"})]
    assert [e for e in graph_tools.EXECUTED if e[0] == "note"] == [  # each ran once
        ("note", {"text": "plain"}),
        ("note", {"text": "hi"}),
    ]
    messages = tool_messages(state)
    assert len(state["messages"]) == 4  # the AI message and three tool messages, replaced
    assert (messages["c1"].status, messages["c1"].artifact["status"]) == ("success", "sent")
    assert messages["c2"].content == "hi"
    assert (messages["c3"].content, messages["c3"].status) == ("Not B2.", "error")


@pytest.mark.parametrize("backend", ["inprocess"])
async def test_a_plain_tool_node_asks_each_held_call_on_its_own_in_the_single_action_shape(
    toolkit: Toolkits,
) -> None:
    two = turn(("local__transfer", TO_A1), ("local__transfer", TO_B2))
    asked: list[dict[str, Any]] = []
    async with toolkit() as kit:
        graph = tool_graph(await kit.aget_tools())
        state = await graph.ainvoke(two, THREAD)
        while "__interrupt__" in state:
            (paused,) = state["__interrupt__"]  # one call at a time
            asked.append(paused.value["action_request"])
            state = await graph.ainvoke(Command(resume={"type": "accept"}), THREAD)
    assert sorted(a["args"]["account"] for a in asked) == ["A1", "B2"]
    assert sorted(str(e[1]["account"]) for e in graph_tools.EXECUTED) == ["A1", "B2"]  # each once
    assert {m.status for m in tool_messages(state).values()} == {"success"}


async def test_a_sync_graph_reviews_its_turn_through_the_toolkits_portal(gateway_url: str) -> None:
    def run_graph() -> dict[str, Any]:
        with GatewayToolkit.from_url(
            gateway_url, token=AGENT_TOKENS["http-modern"], approver_token=OPS_TOKEN
        ) as kit:
            graph = reviewed_graph(kit, kit.get_tools())
            request = interrupt_of(graph.invoke(TURN, THREAD))
            assert len(request["action_requests"]) == 2
            reply = {"decisions": [{"type": "reject"}, {"type": "approve"}]}
            state: dict[str, Any] = graph.invoke(Command(resume=reply), THREAD)
            return state

    state = await anyio.to_thread.run_sync(run_graph)
    assert graph_tools.EXECUTED[-1:] == [("transfer", {**TO_B2, "currency": "EUR"})]
    assert [e[0] for e in graph_tools.EXECUTED] == ["note", "transfer"]
    assert tool_messages(state)["c1"].content == "The call was rejected by a reviewer."
