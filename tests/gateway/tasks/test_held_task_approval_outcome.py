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
from tasks_client import call_as_task, request, tasks_upstream, until_ended, until_message

from gateway.approvals.wire import UPSTREAM_TASK
from gateway.gateway import Gateway

STORE_REREAD = 0.5
"""Seconds between reads of the approval record, as the approvals store re-reads in ``wait``
(its default ``poll_interval``) to see a change another process made."""

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
    await until_message(client, task_id, "waiting for release")
    return task_id, approval


async def _recorded(gateway: Gateway, api: httpx2.AsyncClient, approval: str) -> dict[str, Any]:
    """The approval record once its task's outcome replaced the stand-in result (the replica
    following the task writes it just after the task ends): read again at each change the
    served gateway's approvals store hears of (watched before reading, as its ``wait`` does),
    or after its re-read interval for a change a stdio gateway's process made."""
    store = gateway.parts.approvals.store
    while True:
        with store.waiters.watching(approval) as changed:
            answer = await api.get(f"/api/approvals/{approval}")
            assert answer.status_code == 200, answer.text
            record: dict[str, Any] = answer.json()
            if UPSTREAM_TASK not in ((record.get("result") or {}).get("_meta") or {}):
                return record
            with anyio.move_on_after(STORE_REREAD):
                await changed.wait()


def _text(record: dict[str, Any]) -> str:
    return " ".join(b.get("text", "") for b in (record.get("result") or {}).get("content", []))


@pytest.mark.parametrize("face", FACES)
async def test_a_held_tasks_approval_records_the_upstream_jobs_result_once_it_completes(
    tmp_path: Path, face: Face
) -> None:
    key = marker("outcome")
    with anyio.fail_after(90):
        async with held_rig(tmp_path, face, [tasks_upstream()], POLICY) as (gateway, client, api):
            task_id, approval = await _approved(client, api, key)
            running = (await api.get(f"/api/approvals/{approval}")).json()
            released = await client.call_tool("jobs__release", {"key": key})
            ended = await until_ended(client, task_id)
            record = await _recorded(gateway, api, approval)
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
        async with held_rig(tmp_path, face, [tasks_upstream()], POLICY) as (gateway, client, api):
            task_id, approval = await _approved(client, api, key)
            await request(client, "tasks/cancel", task_id)
            ended = await until_ended(client, task_id)
            record = await _recorded(gateway, api, approval)
    assert ended["status"] == "cancelled", ended
    assert record["state"] == "failed", record
    assert "cancelled" in record["error"], record
    assert "cancelled" in _text(record)
    assert record["result"]["isError"] is True
    assert "Task created" not in str(record)
