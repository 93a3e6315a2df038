"""`gateway.adapters.pydantic_ai.GatewayToolset` end to end: a pydantic-ai agent on a gateway.

Every test runs against the gateway in process and over HTTP in both MCP eras.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import adapter_tools
import pytest
from adapter_support import BACKENDS, OPS, OPS_TOKEN, agent_of, lines_by_call, scripted, token_of
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from gateway.adapters.pydantic_ai import GatewayToolset
from gateway.gateway import Gateway

Toolsets = Callable[..., contextlib.AbstractAsyncContextManager[GatewayToolset]]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def toolset(gateway: Gateway, gateway_url: str, backend: str) -> Toolsets:
    """Opens a `GatewayToolset` on ``backend``, with or without approver credentials."""

    @contextlib.asynccontextmanager
    async def open_toolset(*, approver: bool = True) -> AsyncIterator[GatewayToolset]:
        if backend == "inprocess":
            who = OPS if approver else None
            built = GatewayToolset.from_gateway(gateway, principal=agent_of(backend), approver=who)
        else:
            built = GatewayToolset.from_url(
                gateway_url,
                token=token_of(backend),
                approver_token=OPS_TOKEN if approver else None,
                mode="legacy" if backend == "http-legacy" else "auto",
            )
        async with built:
            yield built

    return open_toolset


def agent(model: FunctionModel, toolset: GatewayToolset) -> Agent[None, str | DeferredToolRequests]:
    return Agent(model, toolsets=[toolset], output_type=[str, DeferredToolRequests])


async def resume(
    run: Any, toolset: GatewayToolset, model: FunctionModel, results: DeferredToolResults
) -> Any:
    applied = await toolset.apply_decisions(run.output, results)
    return await agent(model, toolset).run(
        message_history=run.all_messages(), deferred_tool_results=applied
    )


async def test_tools_keep_the_gateways_names_descriptions_schemas_and_annotations(
    toolset: Toolsets, backend: str
) -> None:
    seen: dict[str, ToolDefinition] = {}

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("looked")])

    async with toolset() as tools:
        assert (await agent(FunctionModel(look), tools).run("look")).output == "looked"
    assert {"echo__echo", "echo__slow", "local__record", "lookup"} <= set(seen)
    echo = seen["echo__echo"]
    assert echo.description == "Echo the text back."
    assert echo.parameters_json_schema["properties"]["text"]["type"] == "string"
    assert echo.parameters_json_schema["required"] == ["text"]
    assert echo.metadata is not None
    assert echo.metadata["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    assert seen["echo__slow"].metadata == seen["echo__slow"].metadata | {
        "annotations": {"destructiveHint": True}
    }
    if backend == "inprocess":
        assert echo.metadata["server"] == "echo"
        assert len(echo.metadata["pin"]) == 64


async def test_a_held_call_ends_the_run_with_an_approval_request_naming_rule_and_reason(
    toolset: Toolsets,
) -> None:
    model = scripted(("local__record", {"text": "held"}), ("echo__echo", {"text": "hi"}))
    async with toolset() as tools:
        run = await agent(model, tools).run("go")
    assert isinstance(run.output, DeferredToolRequests)
    assert [c.tool_call_id for c in run.output.approvals] == ["c0"]
    assert run.output.calls == []
    meta = run.output.metadata["c0"]
    assert meta["approval_id"].startswith("ap_")
    assert meta["rule_id"] == "record-needs-ops"
    assert meta["reason"] == "recording needs an operator"
    assert meta["args"] == {"text": "held"}
    assert adapter_tools.EXECUTED == []


async def test_an_edit_by_the_host_runs_the_edited_args_exactly_once(
    toolset: Toolsets, gateway: Gateway
) -> None:
    model = scripted(("local__record", {"text": "draft"}))
    async with toolset() as tools:
        first = await agent(model, tools).run("go")
        edit = DeferredToolResults(approvals={"c0": ToolApproved(override_args={"text": "final"})})
        second = await resume(first, tools, model, edit)
        assert lines_by_call(second.output) == {"c0": "success: recorded final"}
        record = await gateway.store.get(first.output.metadata["c0"]["approval_id"])
        assert record is not None
        assert (record.state, record.decision, record.delivered) == ("done", "edit", True)
        # Resuming the same run again cannot run the call again: the gateway holds a new one.
        again = await resume(first, tools, model, edit)
    assert isinstance(again.output, DeferredToolRequests)
    assert adapter_tools.EXECUTED == ["final"]


async def test_true_approves_and_a_denial_reaches_the_gateway_and_the_model(
    toolset: Toolsets, gateway: Gateway
) -> None:
    model = scripted(
        ("local__record", {"text": "yes"}),
        ("local__record", {"text": "no"}),
        ("local__record", {"text": "never"}),
    )
    async with toolset() as tools:
        first = await agent(model, tools).run("go")
        answers = {"c0": True, "c1": False, "c2": ToolDenied("Not today.")}
        second = await resume(first, tools, model, DeferredToolResults(approvals=answers))
    assert lines_by_call(second.output) == {
        "c0": "success: recorded yes",
        "c1": "denied: The tool call was denied.",
        "c2": "denied: Not today.",
    }
    assert adapter_tools.EXECUTED == ["yes"]
    denied = await gateway.store.get(first.output.metadata["c2"]["approval_id"])
    assert denied is not None
    assert (denied.state, denied.decided_by, denied.message) == ("denied", OPS.id, "Not today.")


async def test_a_policy_denial_reaches_the_model_as_text_it_can_act_on(toolset: Toolsets) -> None:
    model = scripted(("echo__fail", {"message": "boom"}), ("echo__echo", {"text": "hi"}))
    async with toolset() as tools:
        run = await agent(model, tools).run("go")
    assert lines_by_call(run.output) == {
        "c0": "failed: Failing is forbidden here; pick another tool.",
        "c1": "success: hi",
    }


async def test_external_calls_are_deferred_and_their_results_posted_back_to_the_gateway(
    toolset: Toolsets, gateway: Gateway
) -> None:
    model = scripted(("lookup", {"word": "gate"}))
    async with toolset() as tools:
        first = await agent(model, tools).run("go")
        assert isinstance(first.output, DeferredToolRequests)
        assert [c.tool_call_id for c in first.output.calls] == ["c0"]
        assert first.output.approvals == []
        meta = first.output.metadata["c0"]
        assert (meta["kind"], meta["rule_id"]) == ("external", "lookups-run-outside")
        answer = DeferredToolResults(calls={"c0": {"meaning": "a way in"}})
        second = await resume(first, tools, model, answer)
    assert lines_by_call(second.output) == {"c0": 'success: {"meaning": "a way in"}'}
    record = await gateway.store.get(meta["approval_id"])
    assert record is not None
    assert (record.state, record.delivered) == ("done", True)
    assert record.result is not None
    assert record.result["structuredContent"] == {"meaning": "a way in"}


async def test_without_an_approver_credential_the_call_waits_for_the_gateways_approvers(
    toolset: Toolsets, gateway: Gateway
) -> None:
    model = scripted(("local__record", {"text": "later"}))
    async with toolset(approver=False) as tools:
        first = await agent(model, tools).run("go")
        approval_id = first.output.metadata["c0"]["approval_id"]
        second = await resume(first, tools, model, DeferredToolResults(approvals={"c0": True}))
        assert isinstance(second.output, DeferredToolRequests)
        meta = second.output.metadata["c0"]
        assert meta["approval_id"] == approval_id
        assert meta["waiting_for"] == "the gateway's approvers"
        assert meta["note"]
        assert adapter_tools.EXECUTED == []
        await gateway.approvals.decide(approval_id, "approve", by=OPS, channel="test")
        third = await resume(second, tools, model, DeferredToolResults(approvals={"c0": True}))
    assert lines_by_call(third.output) == {"c0": "success: recorded later"}
    assert adapter_tools.EXECUTED == ["later"]


async def test_resuming_without_apply_decisions_still_decides_approvals_in_the_gateway(
    toolset: Toolsets,
) -> None:
    model = scripted(("local__record", {"text": "a"}), ("local__record", {"text": "b"}))
    async with toolset() as tools:
        first = await agent(model, tools).run("go")
        answers = {"c0": True, "c1": ToolApproved(override_args={"text": "b2"})}
        second = await agent(model, tools).run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals=answers),
        )
    assert lines_by_call(second.output) == {
        "c0": "success: recorded a",
        "c1": "success: recorded b2",
    }
    assert sorted(adapter_tools.EXECUTED) == ["a", "b2"]


async def test_tool_calls_of_one_turn_run_concurrently_through_the_gateway(
    toolset: Toolsets,
) -> None:
    meeting = {"meeting": "agent-turn", "parties": 3}
    model = scripted(*[("local__rendezvous", meeting)] * 3)
    async with toolset() as tools:
        run = await agent(model, tools).run("go")
    assert set(lines_by_call(run.output).values()) == {"success: agent-turn: met 3"}


async def test_an_in_process_host_without_an_approver_decides_where_the_caller_may(
    gateway: Gateway,
) -> None:
    caller = agent_of("caller")
    model = scripted(("local__note", {"text": "mine"}), ("local__record", {"text": "theirs"}))
    async with GatewayToolset.from_gateway(gateway, principal=caller) as tools:
        first = await agent(model, tools).run("go")
        answers = DeferredToolResults(approvals={"c0": True, "c1": True})
        second = await resume(first, tools, model, answers)
    assert isinstance(second.output, DeferredToolRequests)
    assert [c.tool_call_id for c in second.output.approvals] == ["c1"]
    assert second.output.metadata["c1"]["waiting_for"] == "the gateway's approvers"
    assert adapter_tools.EXECUTED == ["mine"]
    noted = await gateway.store.get(first.output.metadata["c0"]["approval_id"])
    assert noted is not None
    assert (noted.state, noted.decided_by, noted.channel) == ("done", caller.id, "pydantic-ai")
