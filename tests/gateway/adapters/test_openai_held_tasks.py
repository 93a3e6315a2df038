"""The OpenAI helpers on an in-process gateway that asks for tasks
(``InProcessGateway(as_task=True)``): each held call is still returned as a `PendingApproval`,
now naming the task that follows it, and `complete_pending` reads the tasks' outcomes (the
approved and edited calls run once, through their tasks)."""

from __future__ import annotations

import json
from typing import Any

import adapter_tools
from adapter_support import OPS, agent_of

from gateway.adapters.openai import (
    HostDecision,
    InProcessGateway,
    complete_pending,
    run_tool_calls,
)
from gateway.gateway import Gateway


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(args)}
    return {"id": call_id, "type": "function", "function": function}


async def test_pending_calls_are_backed_by_tasks_and_complete_from_their_outcomes(
    gateway: Gateway,
) -> None:
    client = InProcessGateway(
        gateway=gateway, principal=agent_of("inprocess"), approver=OPS, as_task=True
    )
    calls = [
        _call("p", "local__record", {"text": "tp"}),
        _call("q", "local__record", {"text": "tq"}),
        _call("r", "local__record", {"text": "tr"}),
        _call("x", "lookup", {"word": "task"}),
    ]
    decisions = {
        "p": HostDecision.approve(),
        "q": HostDecision.approve({"text": "tq2"}),
        "r": HostDecision.deny("Not that one."),
    }
    first = await run_tool_calls(client, calls)
    done = await complete_pending(
        client, first.pending, decisions=decisions, results={"x": {"meaning": "a handle"}}
    )
    tasks = {p.tool_call_id: p.task_id for p in first.pending}
    ended = {
        call_id: (await gateway.parts.tasks.find(task_id or "", agent_of("inprocess"))).status
        for call_id, task_id in tasks.items()
    }
    assert all(task_id and task_id.startswith("lgt_") for task_id in tasks.values())
    assert done.complete
    assert {m["tool_call_id"]: m["content"] for m in done.messages} == {
        "p": "recorded tp",
        "q": "recorded tq2",
        "r": "Error: Not that one.",
        "x": '{"meaning": "a handle"}',
    }
    assert ended == {"p": "completed", "q": "completed", "r": "failed", "x": "completed"}
    assert sorted(adapter_tools.EXECUTED) == ["tp", "tq2"]
