"""Constants and helpers of the LangGraph suite (imported as ``lg_support``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from paths import TESTS
from support import echo_upstream, write_config

from gateway.adapters.langchain import GatewayToolkit
from toolsets.context import Principal

POLICY = TESTS / "e2e" / "langgraph" / "fixtures" / "policy.yaml"
OPS = Principal(id="user:ops", roles=frozenset({"ops"}))
OPS_TOKEN = "ops-token"
BACKENDS = ["inprocess", "http-legacy", "http-modern"]
AGENT_TOKENS = {
    "inprocess": "token-inprocess",
    "http-legacy": "token-legacy",
    "http-modern": "token-modern",
}
THREAD = {"configurable": {"thread_id": "t1"}}
Toolkits = Callable[..., contextlib.AbstractAsyncContextManager[GatewayToolkit]]
"""The ``toolkit`` fixture (conftest.py): opens the gateway's toolkit on the test's backend."""


def agent_of(backend: str) -> Principal:
    """The agent principal a backend calls as (held calls never match across backends)."""
    return Principal(id=f"agent:{backend}")


def tool_graph(tools: Sequence[BaseTool], saver: BaseCheckpointSaver[Any] | None = None) -> Any:
    """A graph whose only node runs the tool calls of the last AI message (a ``ToolNode``)."""
    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(list(tools)))
    builder.add_edge(START, "tools")
    compiled: CompiledStateGraph[Any] = builder.compile(checkpointer=saver or InMemorySaver())
    return compiled


def asks(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    """Graph input: an AI message calling ``name`` with ``args``."""
    call = {"name": name, "args": args, "id": call_id, "type": "tool_call"}
    return {"messages": [AIMessage(content="", tool_calls=[call])]}


def interrupt_of(state: dict[str, Any]) -> dict[str, Any]:
    """The one interrupt request a paused graph carries."""
    (paused,) = state["__interrupt__"]
    value: dict[str, Any] = paused.value
    return value


def last_tool_message(state: dict[str, Any]) -> ToolMessage:
    message = state["messages"][-1]
    assert isinstance(message, ToolMessage), message
    return message


async def rest(
    base: str, method: str, path: str, body: Any = None, **params: str
) -> httpx2.Response:
    """A REST call with the operator's token."""
    headers = {"Authorization": f"Bearer {OPS_TOKEN}"}
    async with httpx2.AsyncClient(base_url=base, timeout=30) as http:
        return await http.request(method, f"/api{path}", json=body, params=params, headers=headers)


def graph_config_at(directory: Path, policy: Path) -> Path:
    """The suite's gateway config in ``directory`` with ``policy``: the echo upstream, the
    ``local`` Python tools, SQLite approvals, the agents' tokens and the ``ops`` approver."""
    local = {
        "name": "local",
        "transport": "python",
        "functions": ["graph_tools:transfer", "graph_tools:ship", "graph_tools:note"],
    }
    auth = {
        "agents": [{"id": agent_of(b).id, "token": t} for b, t in AGENT_TOKENS.items()],
        "approvers": [{"id": OPS.id, "token": OPS_TOKEN, "roles": ["ops"]}],
    }
    return write_config(
        directory,
        [echo_upstream("echo"), local],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
        auth=auth,
    )
