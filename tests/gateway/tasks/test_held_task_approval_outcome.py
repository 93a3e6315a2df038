"""The approval record of a held call whose approved call ran as the upstream's task
(`gateway.tasks.held`) ends with that task's outcome: the job's result once it completes, a
failure naming the cancel once it is cancelled; never the stand-in "Task created on server"
note the call left while the task ran. Both eras; both faces (a stdio gateway shares the SQLite
file with the served one the approver uses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import decide, marker
from gateway_faces import FACES, Face
from held_task_support import held_rig
from mcp import Client
from tasks_client import TERMINAL, call_as_task, request, tasks_upstream, until_ended

from gateway.approvals.wire import UPSTREAM_TASK

POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 2m}}
rules:
  - {id: held, tools: [jobs__job], effect: ask}
"""


async def _approved(client: Client, api: httpx2.AsyncClient, key: str) -> tuple[str, str]:
    """Call the job as a task, approve its pending call; the task's and the approval's ids,
    once the upstream's job runs."""
    created = await call_as_task(client, "jobs__job", {"key": key})
    assert created["status"] == "input_required", created
    approval = str(created["_meta"]["lockgate/pending"]["id"])
    answer = await decide(api, approval, "approve")
    assert answer.status_code == 200, answer.text
    task_id = str(created["taskId"])
    while "waiting for release" not in (
        (task := await request(client, "tasks/get", task_id)).get("statusMessage") or ""
    ):
        assert task["status"] not in TERMINAL, task
        await anyio.sleep((task.get("pollIntervalMs", task.get("pollInterval")) or 100) / 1000)
    return task_id, approval


async def _recorded(api: httpx2.AsyncClient, approval: str) -> dict[str, Any]:
    """The approval record once its task's outcome replaced the stand-in result (the
    replica following the task writes it just after the task ends)."""
    while True:
        answer = await api.get(f"/api/approvals/{approval}")
        assert answer.status_code == 200, answer.text
        record: dict[str, Any] = answer.json()
        if UPSTREAM_TASK not in ((record.get("result") or {}).get("_meta") or {}):
            return record
        await anyio.sleep(0.05)


def _text(record: dict[str, Any]) -> str:
    return " ".join(b.get("text", "") for b in (record.get("result") or {}).get("content", []))


@pytest.mark.parametrize("face", FACES)
async def test_a_held_tasks_approval_records_the_upstream_jobs_result_once_it_completes(
    tmp_path: Path, face: Face
) -> None:
    key = marker("outcome")
    with anyio.fail_after(90):
        async with held_rig(tmp_path, face, [tasks_upstream()], POLICY) as (_gateway, client, api):
            task_id, approval = await _approved(client, api, key)
            running = (await api.get(f"/api/approvals/{approval}")).json()
            released = await client.call_tool("jobs__release", {"key": key})
            ended = await until_ended(client, task_id)
            record = await _recorded(api, approval)
    assert released.content[0].text == "1"
    assert ended["status"] == "completed", ended
    assert "Task created on server" in _text(running)  # the stand-in while the job runs
    assert record["state"] == "done", record
    assert _text(record) == f"job {key} done"
    assert "Task created" not in str(record)


@pytest.mark.parametrize("face", FACES)
async def test_a_held_tasks_approval_records_a_failure_once_its_upstream_task_is_cancelled(
    tmp_path: Path, face: Face
) -> None:
    key = marker("cancelled")
    with anyio.fail_after(90):
        async with held_rig(tmp_path, face, [tasks_upstream()], POLICY) as (_gateway, client, api):
            task_id, approval = await _approved(client, api, key)
            await request(client, "tasks/cancel", task_id)
            ended = await until_ended(client, task_id)
            record = await _recorded(api, approval)
    assert ended["status"] == "cancelled", ended
    assert record["state"] == "failed", record
    assert "cancelled" in record["error"], record
    assert "cancelled" in _text(record)
    assert record["result"]["isError"] is True
    assert "Task created" not in str(record)
