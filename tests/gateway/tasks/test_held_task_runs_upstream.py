"""A held call answered as a task whose tool supports tasks runs, once approved, as the
upstream's task (`gateway.tasks.held`, `TaskService.adopt`): a ``taskSupport: required`` tool
(server-everything's ``simulate-research-query``, the test server's ``job``) refuses any other
call. The held task then follows that upstream task: its status, its result through the result
steps with the call's one ``tool.result``, a cancel passed to the server. Each era reads a task's
result in its own shape: 2025-11-25 without 2026-07-28's ``resultType``. Both eras; both faces
(a stdio gateway shares the SQLite file with the served one the approver uses).

``@modelcontextprotocol/server-everything`` is installed from the npm registry once per test run
(``npm_support``); those cases are skipped only without npm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import decide, marker
from gateway_faces import FACES, HTTP_FACES, Face
from held_task_support import held_rig
from mcp import Client
from npm_support import NODE
from support import echo_upstream
from tasks_client import (
    call_as_task,
    modern,
    request,
    tasks_upstream,
    until_ended,
    until_message,
)

from gateway.events.bus import Subscription
from gateway.events.model import Event

RESEARCH = "everything__simulate-research-query"
POLICY = f"""\
version: 1
defaults: {{effect: allow, approval: {{approvers: ["role:security"], expires: 2m}}}}
rules:
  - {{id: held, tools: [{RESEARCH}, jobs__job, echo__echo], effect: ask}}
"""


async def _approved(client: Client, api: httpx2.AsyncClient, tool: str, args: Any) -> str:
    """Call ``tool`` as a task, approve its pending call over the REST API; the task's id."""
    created = await call_as_task(client, tool, args)
    assert created["status"] == "input_required", created
    approval = created["_meta"]["lockgate/pending"]["id"]
    answer = await decide(api, approval, "approve")
    assert answer.status_code == 200, answer.text
    return str(created["taskId"])


async def _result(client: Client, task_id: str, ended: dict[str, Any]) -> dict[str, Any]:
    """The ended task's result: inlined in 2026-07-28's ``tasks/get``, else ``tasks/result``."""
    return (
        dict(ended["result"]) if modern(client) else await request(client, "tasks/result", task_id)
    )


async def _tool_results(events: Subscription, tool: str, task_id: str) -> list[Event]:
    """The ``tool.result`` events of ``tool`` up to the task's ``task.completed``."""
    seen: list[Event] = []
    async for event in events:
        if event.type == "tool.result" and event.data["tool"] == tool:
            seen.append(event)
        if event.type == "task.completed" and event.data["task_id"] == task_id:
            return seen
    raise AssertionError(f"the bus closed before task {task_id} ended")


@pytest.mark.parametrize("face", FACES)
async def test_an_approved_held_call_to_a_task_only_tool_completes_as_the_upstreams_task(
    everything: Path, tmp_path: Path, face: Face
) -> None:
    entry = {"name": "everything", "transport": "stdio", "command": NODE,
             "args": [str(everything), "stdio"]}  # fmt: skip
    with anyio.fail_after(120):
        async with (
            held_rig(tmp_path, face, [entry], POLICY) as (gateway, client, api),
            gateway.events.subscribe(["tool.*", "task.*"]) as events,
        ):
            is_modern = modern(client)
            task_id = await _approved(client, api, RESEARCH, {"topic": "gateways"})
            ended = await until_ended(client, task_id)
            report = await _result(client, task_id, ended)
            pending = (await api.get("/api/approvals", params={"state": "done"})).json()
            results = []
            if face.transport == "http":  # the served gateway ran it: its bus tells
                results = await _tool_results(events, RESEARCH, task_id)
    assert ended["status"] == "completed", ended
    assert "# Research Report: gateways" in report["content"][0]["text"]
    assert ("resultType" in report) is is_modern
    # The approved call was claimed once (executing, then done) and ran once upstream.
    assert [c["tool"] for c in pending["items"]] == [RESEARCH]
    if face.transport == "http":
        assert len(results) == 1, [e.data for e in results]
        assert "# Research Report: gateways" in results[0].data["response"]["content"][0]["text"]


@pytest.mark.parametrize("face", FACES)
async def test_cancelling_an_approved_held_task_cancels_the_upstreams_task(
    tmp_path: Path, face: Face
) -> None:
    key = marker("cancel")
    with anyio.fail_after(90):
        async with held_rig(tmp_path, face, [tasks_upstream()], POLICY) as (_gateway, client, api):
            task_id = await _approved(client, api, "jobs__job", {"key": key})
            running = await until_message(client, task_id, "waiting for release")
            await request(client, "tasks/cancel", task_id)
            ended = await until_ended(client, task_id)
            released = await client.call_tool("jobs__release", {"key": key})
    assert running["status"] == "working"
    assert ended["status"] == "cancelled"
    assert released.content[0].text == "0"  # the server's job was cancelled: nothing to release


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_each_era_reads_a_held_tasks_result_with_its_own_fields_only(
    tmp_path: Path, face: Face
) -> None:
    text = marker("era")
    with anyio.fail_after(60):
        async with held_rig(tmp_path, face, [echo_upstream()], POLICY) as (_gateway, client, api):
            is_modern = modern(client)
            task_id = await _approved(client, api, "echo__echo", {"text": text})
            ended = await until_ended(client, task_id)
            result = await _result(client, task_id, ended)
    assert ended["status"] == "completed"
    assert text in result["content"][0]["text"]
    if is_modern:
        assert result["resultType"] == "complete"  # 2026-07-28's CallToolResult requires it
    else:
        assert "resultType" not in result  # a 2026-07-28 field
