"""Issue 30: in a plain LangGraph ``ToolNode`` with two held calls in one AI message, the
reviewer's reply must go to the call whose request the reviewer was shown, never to the other.
Real graphs against a real gateway: 20 turns in process, one over HTTP in each MCP era."""

from __future__ import annotations

from typing import Any

import graph_tools
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from lg_support import Toolkits, tool_graph

TO_A1 = {"account": "A1", "amount": 5}
TO_B2 = {"account": "B2", "amount": 7}


def two_held(turn: int) -> dict[str, Any]:
    calls = [
        {"name": "local__transfer", "args": args, "id": f"c{i}", "type": "tool_call"}
        for i, args in enumerate((TO_A1, TO_B2), 1)
    ]
    return {"messages": [AIMessage(content="", tool_calls=calls, id=f"ai{turn}")]}


async def review_one_turn(graph: Any, turn: int) -> list[str]:
    """Approve the call the reviewer is shown for A1, reject the one shown for B2; returns the
    accounts shown, in order."""
    config = {"configurable": {"thread_id": f"turn-{turn}"}}
    state = await graph.ainvoke(two_held(turn), config)
    shown: list[str] = []
    while "__interrupt__" in state:
        (paused,) = state["__interrupt__"]
        account = paused.value["action_request"]["args"]["account"]
        shown.append(account)
        reply = {"type": "accept"} if account == "A1" else {"type": "ignore"}
        state = await graph.ainvoke(Command(resume=reply), config)
    messages = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert messages["c1"].status == "success", (turn, shown, messages)
    assert messages["c2"].status == "error", (turn, shown, messages)
    return shown


@pytest.mark.parametrize("backend", ["inprocess"])
async def test_twenty_turns_in_process_each_reply_goes_to_the_call_it_was_shown(
    toolkit: Toolkits,
) -> None:
    async with toolkit() as kit:
        graph = tool_graph(await kit.aget_tools())
        for turn in range(20):
            assert sorted(await review_one_turn(graph, turn)) == ["A1", "B2"]
    transfers = [e[1]["account"] for e in graph_tools.EXECUTED if e[0] == "transfer"]
    assert transfers == 20 * ["A1"]  # B2 was never run


@pytest.mark.parametrize("backend", ["http-legacy", "http-modern"])
async def test_over_http_each_reply_goes_to_the_call_it_was_shown(toolkit: Toolkits) -> None:
    async with toolkit() as kit:
        graph = tool_graph(await kit.aget_tools())
        for turn in range(3):
            assert sorted(await review_one_turn(graph, turn)) == ["A1", "B2"]
    transfers = [e[1]["account"] for e in graph_tools.EXECUTED if e[0] == "transfer"]
    assert transfers == 3 * ["A1"]


@pytest.mark.parametrize("backend", ["inprocess"])
async def test_a_reply_naming_another_approval_is_not_applied_and_the_call_is_asked_again(
    toolkit: Toolkits,
) -> None:
    config = {"configurable": {"thread_id": "named"}}
    async with toolkit() as kit:
        graph = tool_graph(await kit.aget_tools())
        state = await graph.ainvoke(two_held(0), config)
        (paused,) = state["__interrupt__"]
        mine = paused.value["lockgate"]["approval_id"]
        wrong = {"type": "accept", "approval_id": "ap_another"}
        state = await graph.ainvoke(Command(resume=wrong), config)
        (again,) = state["__interrupt__"]
        assert again.value["lockgate"]["approval_id"] == mine  # the same call, asked again
        assert "answered approval ap_another, not this call" in again.value["description"]
        assert not graph_tools.EXECUTED  # nothing ran on the misdirected reply
        right = {"type": "accept", "approval_id": mine}
        state = await graph.ainvoke(Command(resume=right), config)
    assert graph_tools.EXECUTED == [("transfer", {**TO_A1, "currency": "EUR"})]
