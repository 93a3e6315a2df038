"""The remote backends asking for tasks against the gateway served over HTTP, both eras: the
pydantic-ai toolset (``from_url(..., as_task=True)``) gets a held call back at once as a deferred
tool request naming the gateway's task, and the resumed run reads the task's outcome (approved:
the call ran once, in the task; denied: the refusal, never run); the OpenAI helpers
(``RemoteGateway(..., as_task=True)``) get `PendingApproval`s naming tasks and `complete_pending`
reads their outcomes. A call no policy holds is a plain result."""

from __future__ import annotations

import json
from typing import Any

import adapter_tools
import pytest
from adapter_support import OPS_TOKEN, agent_of, lines_by_call, scripted, token_of
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.models.function import FunctionModel

from gateway.adapters.openai import HostDecision, RemoteGateway, complete_pending, run_tool_calls
from gateway.adapters.pydantic_ai import GatewayToolset
from gateway.gateway import Gateway

REMOTE = ["http-legacy", "http-modern"]


def _toolset(url: str, backend: str) -> GatewayToolset:
    return GatewayToolset.from_url(
        url,
        token=token_of(backend),
        approver_token=OPS_TOKEN,
        mode="legacy" if backend == "http-legacy" else "auto",
        as_task=True,
    )


async def _run(model: FunctionModel, tools: GatewayToolset, **resume: Any) -> Any:
    agent: Agent[None, str | DeferredToolRequests] = Agent(
        model, toolsets=[tools], output_type=[str, DeferredToolRequests]
    )
    return await (agent.run(**resume) if resume else agent.run("go"))


@pytest.mark.parametrize("decision", ["approve", "deny"])
@pytest.mark.parametrize("backend", REMOTE)
async def test_a_remote_held_call_is_a_deferred_request_naming_its_task_resumed_from_it(
    gateway: Gateway, gateway_url: str, backend: str, decision: str
) -> None:
    model = scripted(("local__record", {"text": f"remote-{decision}"}))
    approval: Any = True if decision == "approve" else ToolDenied("Not today.")
    async with _toolset(gateway_url, backend) as tools:
        first = await _run(model, tools)
        assert isinstance(first.output, DeferredToolRequests)
        meta = first.output.metadata["c0"]
        held = await gateway.parts.tasks.find(meta["task_id"], agent_of(backend))
        answers = DeferredToolResults(approvals={"c0": approval})
        applied = await tools.apply_decisions(first.output, answers)
        second = await _run(
            model, tools, message_history=first.all_messages(), deferred_tool_results=applied
        )
        ended = await gateway.parts.tasks.find(meta["task_id"], agent_of(backend))
    assert meta["approval_id"].startswith("ap_")
    assert held.status == "input_required"
    assert held.approval_id == meta["approval_id"]
    if decision == "approve":
        assert lines_by_call(second.output) == {"c0": "success: recorded remote-approve"}
        assert ended.status == "completed"
        assert adapter_tools.EXECUTED == ["remote-approve"]
    else:
        assert lines_by_call(second.output) == {"c0": "denied: Not today."}
        assert ended.status == "failed"
        assert adapter_tools.EXECUTED == []


@pytest.mark.parametrize("backend", REMOTE)
async def test_a_remote_call_nothing_holds_is_a_plain_result_when_asking_for_tasks(
    gateway_url: str, backend: str
) -> None:
    model = scripted(("local__rendezvous", {"meeting": f"plain-{backend}", "parties": 1}))
    async with _toolset(gateway_url, backend) as tools:
        run = await _run(model, tools)
    assert lines_by_call(run.output) == {"c0": f"success: plain-{backend}: met 1"}


@pytest.mark.parametrize("backend", REMOTE)
async def test_the_remote_openai_helpers_complete_pending_calls_from_their_tasks(
    gateway: Gateway, gateway_url: str, backend: str
) -> None:
    client = RemoteGateway(
        gateway_url,
        token=token_of(backend),
        approver_token=OPS_TOKEN,
        mode="legacy" if backend == "http-legacy" else "auto",
        as_task=True,
    )
    calls = [
        {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for c, n, a in [
            ("p", "local__record", {"text": "rp"}),
            ("r", "local__record", {"text": "rr"}),
            ("x", "lookup", {"word": "task"}),
        ]
    ]
    decisions = {"p": HostDecision.approve(), "r": HostDecision.deny("Not that one.")}
    async with client:
        first = await run_tool_calls(client, calls)
        done = await complete_pending(
            client, first.pending, decisions=decisions, results={"x": {"meaning": "a handle"}}
        )
    tasks = {p.tool_call_id: p.task_id for p in first.pending}
    assert all(task_id and task_id.startswith("lgt_") for task_id in tasks.values())
    assert done.complete
    assert {m["tool_call_id"]: m["content"] for m in done.messages} == {
        "p": "recorded rp",
        "r": "Error: Not that one.",
        "x": '{"meaning": "a handle"}',
    }
    assert adapter_tools.EXECUTED == ["rp"]
