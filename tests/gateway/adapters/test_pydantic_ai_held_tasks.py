"""The pydantic-ai toolset asking for tasks (``from_gateway(..., as_task=True)``): a held call
is a deferred tool request naming its task, and the resumed run reads the task's outcome (the
approved call runs once, through the task; a denial and a worker's answer are the task's end).
In process only: the remote backend asks for no tasks."""

from __future__ import annotations

from typing import Any

import adapter_tools
from adapter_support import OPS, agent_of, lines_by_call, scripted
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.models.function import FunctionModel

from gateway.adapters.pydantic_ai import GatewayToolset
from gateway.gateway import Gateway
from toolsets.context import Principal


def _toolset(gateway: Gateway) -> GatewayToolset:
    return GatewayToolset.from_gateway(
        gateway, principal=agent_of("inprocess"), approver=OPS, as_task=True
    )


async def _run(model: FunctionModel, tools: GatewayToolset, **resume: Any) -> Any:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, toolsets=[tools], output_type=[str, DeferredToolRequests]
    )
    return await (agent.run(**resume) if resume else agent.run("go"))


async def _task(gateway: Gateway, task_id: str, who: Principal) -> Any:
    return await gateway.parts.tasks.find(task_id, who)


async def test_a_held_call_is_a_deferred_request_naming_its_task_and_runs_once_approved(
    gateway: Gateway,
) -> None:
    model = scripted(("local__record", {"text": "tasked"}))
    async with _toolset(gateway) as tools:
        first = await _run(model, tools)
        assert isinstance(first.output, DeferredToolRequests)
        meta = first.output.metadata["c0"]
        held = await _task(gateway, meta["task_id"], agent_of("inprocess"))
        answers = DeferredToolResults(approvals={"c0": True})
        applied = await tools.apply_decisions(first.output, answers)
        second = await _run(
            model, tools, message_history=first.all_messages(), deferred_tool_results=applied
        )
        ended = await _task(gateway, meta["task_id"], agent_of("inprocess"))
    assert meta["approval_id"].startswith("ap_")
    assert meta["task_id"].startswith("lgt_")
    assert held.status == "input_required"
    assert held.approval_id == meta["approval_id"]
    assert lines_by_call(second.output) == {"c0": "success: recorded tasked"}
    assert ended.status == "completed"
    assert adapter_tools.EXECUTED == ["tasked"]


async def test_a_denied_held_task_reaches_the_model_and_never_runs(gateway: Gateway) -> None:
    model = scripted(("local__record", {"text": "refused"}))
    async with _toolset(gateway) as tools:
        first = await _run(model, tools)
        answers = DeferredToolResults(approvals={"c0": ToolDenied("Not today.")})
        applied = await tools.apply_decisions(first.output, answers)
        second = await _run(
            model, tools, message_history=first.all_messages(), deferred_tool_results=applied
        )
        ended = await _task(gateway, first.output.metadata["c0"]["task_id"], agent_of("inprocess"))
    assert lines_by_call(second.output) == {"c0": "denied: Not today."}
    assert ended.status == "failed"
    assert adapter_tools.EXECUTED == []


async def test_a_deferred_call_answered_by_the_host_ends_its_task_with_that_value(
    gateway: Gateway,
) -> None:
    model = scripted(("lookup", {"word": "task"}))
    async with _toolset(gateway) as tools:
        first = await _run(model, tools)
        meta = first.output.metadata["c0"]
        answers = DeferredToolResults(calls={"c0": {"meaning": "a handle"}})
        applied = await tools.apply_decisions(first.output, answers)
        second = await _run(
            model, tools, message_history=first.all_messages(), deferred_tool_results=applied
        )
        ended = await _task(gateway, meta["task_id"], agent_of("inprocess"))
    assert meta["kind"] == "external"
    assert lines_by_call(second.output) == {"c0": 'success: {"meaning": "a handle"}'}
    assert ended.status == "completed"
