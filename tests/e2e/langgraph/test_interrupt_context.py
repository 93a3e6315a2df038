"""A LangGraph interrupt's description carries the held call's context pack as plain lines (the
same rendering as a Slack notice): the rule and the part of its ``a || b`` condition that held,
the session's previous call and who may decide; in process and over HTTP in both MCP eras."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from lg_support import THREAD, Toolkits, asks, graph_config_at, interrupt_of, tool_graph

POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: odd-transfers
    tools: [local__transfer]
    when: 'args.amount > 100 || args.account.startsWith("X")'
    effect: ask
    reason: an unusual transfer
    approval: {approvers: ["role:ops"], hold: 30s, expires: 10m}
"""
PART = 'args.account.startsWith("X")'


@pytest.fixture
def graph_config(tmp_path: Path) -> Path:
    """The suite's gateway (conftest.py), with this module's policy."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return graph_config_at(tmp_path, policy)


async def test_the_interrupt_says_which_part_held_the_call_what_came_before_and_who_decides(
    toolkit: Toolkits, backend: str
) -> None:
    async with toolkit() as kit:
        graph = tool_graph(await kit.aget_tools())
        before = await graph.ainvoke(asks("echo__echo", {"text": "hi"}, "c0"), THREAD)
        with anyio.fail_after(20):  # a graph tool does not wait for the 30 s hold
            state = await graph.ainvoke(
                asks("local__transfer", {"account": "X9", "amount": 5}), THREAD
            )
        request = interrupt_of(state)

    assert before["messages"][-1].content == "hi"
    lines = request["description"].split("\n")
    (why,) = [line for line in lines if line.startswith("Why held: ")]
    assert why.startswith("Why held: rule 'odd-transfers' (")
    assert (
        f"holds calls of local__transfer when {PART} (the part that held of: "
        f"args.amount > 100 || {PART}; not args.amount > 100): an unusual transfer"
    ) in why
    if backend != "http-modern":  # a 2026-07-28 toolkit names no session: each call is alone
        assert "Before this: echo__echo" in lines  # not the held call itself (answered pending)
    assert "Who decides: role:ops decides" in lines
    assert any(line.startswith("Requested ") and "expires" in line for line in lines)
