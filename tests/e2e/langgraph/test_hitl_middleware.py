"""`gateway.adapters.middleware.LockgateMiddleware` in real LangChain 1.x ``create_agent`` agents
(a scripted chat model, an in-memory checkpointer) against a real gateway, in process and over
HTTP in both MCP eras: the held calls of a model turn are one interrupt in
``HumanInTheLoopMiddleware``'s shape, answered with one batched reply."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
import graph_tools
import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from lg_support import (
    AGENT_TOKENS,
    OPS_TOKEN,
    THREAD,
    Toolkits,
    agent_of,
    graph_config_at,
    interrupt_of,
    rest,
)

import lockgate
from gateway.adapters.langchain import GatewayToolkit
from gateway.adapters.middleware import LockgateMiddleware
from gateway.gateway import Gateway

POLICY = """\
version: 1
defaults:
  effect: allow
  approval:
    approvers: ["role:ops"]
    expires: 10m
    hold: 30s
    decisions: [approve, deny, edit, respond]
rules:
  - id: transfers-need-ops
    tools: [local__transfer]
    effect: ask
    reason: money leaves the company
  - id: big-transfers-refused
    tools: [local__transfer]
    when: args.amount > 1000
    effect: deny
    message: Transfers above 1000 are refused.
  - id: the-caller-ships
    tools: [local__ship]
    effect: ask
    reason: shipping costs money
    approval: {approvers: [caller], decisions: [approve, deny]}
"""
TO_A1 = {"account": "A1", "amount": 5}
TO_B2 = {"account": "B2", "amount": 7}
PARCEL = {
    "parcel": {"weight_kg": 2.0, "to": {"street": "Main 1", "city": "Oslo"}},
    "speed": "standard",
}


class ScriptedModel(BaseChatModel):
    """A chat model answering with its ``replies`` in turn (the last one from then on)."""

    replies: list[AIMessage]
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


def calling(*calls: tuple[str, dict[str, Any]]) -> ScriptedModel:
    """A model that calls ``calls`` in one turn, then says "done"."""
    tool_calls = [
        {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
        for i, (name, args) in enumerate(calls, 1)
    ]
    return ScriptedModel(replies=[AIMessage(content="", tool_calls=tool_calls), AIMessage("done")])


def agent(
    model: ScriptedModel, kit: GatewayToolkit, tools: list[Any], *, middleware: bool = True
) -> Any:
    return create_agent(
        model,
        tools=tools,
        middleware=[LockgateMiddleware(kit)] if middleware else [],
        checkpointer=InMemorySaver(),
    )


def tool_messages(state: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}


USER = {"messages": [{"role": "user", "content": "go"}]}


@pytest.fixture
def graph_config(tmp_path: Path) -> Path:
    """The suite's gateway (conftest.py), with this module's policy."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return graph_config_at(tmp_path, policy)


async def test_two_held_calls_of_a_turn_are_one_interrupt_and_one_reply_runs_only_the_approved(
    toolkit: Toolkits, gateway: Gateway
) -> None:
    model = calling(
        ("local__transfer", TO_A1), ("local__note", {"text": "hi"}), ("local__transfer", TO_B2)
    )
    async with toolkit() as kit:
        graph = agent(model, kit, await kit.aget_tools())
        state = await graph.ainvoke(USER, THREAD)
        assert tool_messages(state)["c2"].content == "hi"  # allowed: ran, not asked about
        request = interrupt_of(state)
        ids = [about["approval_id"] for about in request["lockgate"]]
        assert [(a["name"], a["args"]) for a in request["action_requests"]] == [
            ("local__transfer", TO_A1),
            ("local__transfer", TO_B2),
        ]
        assert [a["description"].split("\n")[0] for a in request["action_requests"]] == [
            f"money leaves the company (approval {id})" for id in ids
        ]
        assert request["review_configs"] == 2 * [
            {
                "action_name": "local__transfer",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            }
        ]
        records = [await gateway.store.get(id) for id in ids]  # on record, as any held call
        assert [(r.state, r.rule_id) for r in records if r] == 2 * [
            ("pending", "transfers-need-ops")
        ]
        assert graph_tools.EXECUTED == [("note", {"text": "hi"})]
        reply = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "Not B2."}]}
        state = await graph.ainvoke(Command(resume=reply), THREAD)
    assert graph_tools.EXECUTED[1:] == [("transfer", {**TO_A1, "currency": "EUR"})]
    messages = tool_messages(state)
    assert (messages["c1"].status, messages["c1"].artifact["status"]) == ("success", "sent")
    assert (messages["c3"].content, messages["c3"].status) == ("Not B2.", "error")
    assert state["messages"][-1].content == "done"
    assert model.calls == 2
    done = [await gateway.store.get(id) for id in ids]
    assert [r.state for r in done if r] == ["done", "denied"]


async def test_a_refused_edit_is_asked_again_alone_and_respond_answers_instead(
    toolkit: Toolkits,
) -> None:
    model = calling(("local__transfer", TO_A1), ("local__transfer", TO_B2))
    async with toolkit() as kit:
        graph = agent(model, kit, await kit.aget_tools())
        await graph.ainvoke(USER, THREAD)
        too_big = {"name": "local__transfer", "args": {"account": "A1", "amount": 5000}}
        reply = {
            "decisions": [
                {"type": "edit", "edited_action": too_big},
                {"type": "respond", "message": "Ask finance."},
            ]
        }
        state = await graph.ainvoke(Command(resume=reply), THREAD)
        again = interrupt_of(state)
        assert [a["args"] for a in again["action_requests"]] == [TO_A1]
        assert (
            "the policy refuses the edited arguments" in again["action_requests"][0]["description"]
        )
        edit = {"type": "edit", "edited_action": {"name": "local__transfer", "args": TO_B2}}
        state = await graph.ainvoke(Command(resume={"decisions": [edit]}), THREAD)
    assert graph_tools.EXECUTED == [("transfer", {**TO_B2, "currency": "EUR"})]
    messages = tool_messages(state)
    assert messages["c1"].artifact["account"] == "B2"
    # transfer declares an output schema, which no free text conforms to: an error result.
    assert (messages["c2"].content, messages["c2"].status) == ("Ask finance.", "error")


async def test_without_the_middleware_each_held_call_is_asked_in_the_single_action_shape(
    toolkit: Toolkits,
) -> None:
    async with toolkit() as kit:
        graph = agent(
            calling(("local__transfer", TO_A1)), kit, await kit.aget_tools(), middleware=False
        )
        request = interrupt_of(await graph.ainvoke(USER, THREAD))
        assert request["action_request"] == {"action": "local__transfer", "args": TO_A1}
        state = await graph.ainvoke(Command(resume={"type": "accept"}), THREAD)
    assert tool_messages(state)["c1"].status == "success"
    assert graph_tools.EXECUTED == [("transfer", {**TO_A1, "currency": "EUR"})]


async def test_a_host_without_an_approver_credential_decides_caller_rules_and_is_told_what_it_lacks(
    toolkit: Toolkits, gateway: Gateway, backend: str
) -> None:
    model = calling(("local__ship", PARCEL), ("local__transfer", TO_A1))
    async with toolkit(approver=False) as kit:
        graph = agent(model, kit, await kit.aget_tools())
        request = interrupt_of(await graph.ainvoke(USER, THREAD))
        ids = [about["approval_id"] for about in request["lockgate"]]
        reply = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
        state = await graph.ainvoke(Command(resume=reply), THREAD)
    assert graph_tools.EXECUTED == [("ship", PARCEL)]
    messages = tool_messages(state)
    assert messages["c1"].content == "shipped 2.0 kg to Oslo (standard)"
    refused = messages["c2"]
    assert refused.status == "error"
    assert "This host may not decide it" in refused.content
    assert "no approver credential" in refused.content
    assert "does not name 'caller'" in refused.content
    fix = "approver=" if backend == "inprocess" else "approver_token="
    assert f"pass {fix}" in refused.content
    shipped, transfer = [await gateway.store.get(id) for id in ids]
    assert shipped is not None
    assert transfer is not None
    assert (shipped.state, shipped.decided_by) == ("done", agent_of(backend).id)
    assert transfer.state == "pending"  # still the operator's to decide


async def test_a_sync_agent_reviews_its_turn_through_the_toolkits_portal(gateway_url: str) -> None:
    def run_agent() -> dict[str, Any]:
        model = calling(("local__transfer", TO_A1), ("local__transfer", TO_B2))
        with GatewayToolkit.from_url(
            gateway_url, token=AGENT_TOKENS["http-modern"], approver_token=OPS_TOKEN
        ) as kit:
            graph = agent(model, kit, kit.get_tools())
            request = interrupt_of(graph.invoke(USER, THREAD))
            assert len(request["action_requests"]) == 2
            reply = {"decisions": [{"type": "reject"}, {"type": "approve"}]}
            state: dict[str, Any] = graph.invoke(Command(resume=reply), THREAD)
            return state

    state = await anyio.to_thread.run_sync(run_agent)
    assert graph_tools.EXECUTED == [("transfer", {**TO_B2, "currency": "EUR"})]
    assert tool_messages(state)["c1"].content == "The call was rejected by a reviewer."


async def test_a_reply_of_the_wrong_length_is_asked_again_and_a_decision_on_record_first_wins(
    toolkit: Toolkits, gateway_url: str
) -> None:
    model = calling(("local__transfer", TO_A1), ("local__transfer", TO_B2))
    async with toolkit() as kit:
        graph = agent(model, kit, await kit.aget_tools())
        request = interrupt_of(await graph.ainvoke(USER, THREAD))
        state = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
        again = interrupt_of(state)
        assert len(again["action_requests"]) == 2
        assert (
            "needs {'decisions': [...]} with 2 decision(s)"
            in again["action_requests"][1]["description"]
        )
        first = request["lockgate"][0]["approval_id"]
        decided = await rest(
            gateway_url, "POST", f"/approvals/{first}/decision", {"decision": "deny"}
        )
        assert decided.status_code == 200
        reply = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
        state = await graph.ainvoke(Command(resume=reply), THREAD)
    assert graph_tools.EXECUTED == [("transfer", {**TO_B2, "currency": "EUR"})]
    assert tool_messages(state)["c1"].status == "error"


async def test_only_the_calling_agent_may_post_a_caller_decision(
    gateway: Gateway, gateway_url: str
) -> None:
    kit = GatewayToolkit.from_gateway(gateway, principal=agent_of("http-legacy"))
    graph = agent(calling(("local__ship", PARCEL)), kit, await kit.aget_tools())
    assert isinstance(LockgateMiddleware(kit), lockgate.LockgateMiddleware)
    (about,) = interrupt_of(await graph.ainvoke(USER, THREAD))["lockgate"]
    path = f"/api/approvals/{about['approval_id']}/caller-decision"

    async def post(token: str) -> httpx2.Response:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(base_url=gateway_url, timeout=30) as http:
            return await http.post(path, json={"decision": "approve"}, headers=headers)

    other, approver = await post(AGENT_TOKENS["http-modern"]), await post(OPS_TOKEN)
    assert (other.status_code, approver.status_code) == (404, 403)
    mine = await post(AGENT_TOKENS["http-legacy"])
    assert (mine.status_code, mine.json()["state"]) == (200, "approved")
    assert graph_tools.EXECUTED == []  # approved; it runs when the agent resumes


def test_a_sync_agent_of_an_in_process_gateway_reviews_through_its_portal(
    graph_config: Path,
) -> None:
    model = calling(("local__transfer", TO_A1), ("local__ship", PARCEL))
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Gateway.from_config(graph_config)) as gateway,
    ):
        kit = GatewayToolkit.from_gateway(gateway, principal=agent_of("inprocess"), portal=portal)
        graph = agent(model, kit, kit.get_tools())
        request = interrupt_of(graph.invoke(USER, THREAD))
        assert [c["allowed_decisions"] for c in request["review_configs"]] == [
            ["approve", "edit", "reject", "respond"],
            ["approve", "reject"],
        ]
        reply = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
        state = graph.invoke(Command(resume=reply), THREAD)
    assert graph_tools.EXECUTED == [("ship", PARCEL)]  # the caller's rule only
    assert "pass approver=" in tool_messages(state)["c1"].content
