"""A LangGraph agent using the gateway's tools; a held call pauses the graph and is resumed.

Run (offline, no API key; needs ``pip install 'lockgate[langchain]'``):
``python examples/langgraph_agent.py``.

A scripted chat model plays the model. It writes a README (allowed) and a ``.env`` file, which
the ``secrets`` rule holds for security's approval. The tool node pauses the graph with
``interrupt()``, carrying LangGraph's human-in-the-loop request. The host, holding an approver
credential, resumes with an ``edit`` (``Command(resume={"type": "edit", "args": ...})``): the
gateway re-validates the edit, records it, and executes the call exactly once with the edited
arguments. The model then reads ``.env`` back. The graph's state lives in an in-memory
checkpointer; the pending call lives in the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command

from gateway import Gateway
from gateway.adapters.langchain import GatewayToolkit
from toolsets.context import Principal

HERE = Path(__file__).resolve().parent
AGENT = Principal(id="agent:example")
ALICE = Principal(id="user:alice", roles=frozenset({"security"}))
THREAD = {"configurable": {"thread_id": "example"}}


class ScriptedChatModel(BaseChatModel):
    """The "model": write two files, read the secret one back, then summarise."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        done = [m for m in messages if isinstance(m, ToolMessage)]
        if not done:
            reply = _calls(
                ("files__write_file", {"path": "README.md", "content": "# demo\n"}),
                ("files__write_file", {"path": ".env", "content": "API_KEY=sk-live-123\n"}),
            )
        elif not any(m.name == "files__read_file" for m in done):
            reply = _calls(("files__read_file", {"path": ".env"}))
        else:
            lines = [f"{m.tool_call_id} {m.name} [{m.status}]: {m.content}" for m in done]
            reply = AIMessage(content="\n".join(line.strip() for line in lines))
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _calls(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    tool_calls = [
        {"name": name, "args": args, "id": f"call_{name.split('__')[1]}_{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(calls)
    ]
    return AIMessage(content="", tool_calls=tool_calls)


def build_graph(toolkit_tools: list[Any]) -> Any:
    """The usual agent loop: the model calls tools until it answers in text."""
    model = ScriptedChatModel().bind_tools(toolkit_tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(toolkit_tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


async def main() -> None:
    async with Gateway.from_config(HERE / "gateway.yaml") as gateway:
        toolkit = GatewayToolkit.from_gateway(gateway, principal=AGENT, approver=ALICE)
        graph = build_graph(await toolkit.aget_tools())
        state = await graph.ainvoke({"messages": [("user", "Set up the project.")]}, THREAD)
        while "__interrupt__" in state:
            (paused,) = state["__interrupt__"]
            request = paused.value
            print(f"paused: {json.dumps(request['action_request'])}")
            print(f"  {request['description']}; offered: {request['config']}")
            edited = {"path": ".env", "content": "API_KEY=<set in the vault>\n"}
            state = await graph.ainvoke(Command(resume={"type": "edit", "args": edited}), THREAD)
        print("model:")
        print(state["messages"][-1].content)
        for call in await gateway.store.list():
            print(
                f"gateway record: {call.tool} {call.args['path']} -> {call.state} ({call.decision})"
            )


if __name__ == "__main__":
    anyio.run(main)
