"""Task status pushed to a 2026-07-28 client (the Tasks extension's ``notifications/tasks`` on a
``subscriptions/listen`` stream naming ``taskIds``): an upstream task's changes on both faces,
and a held call's task when an approver decides it over the REST API; the stream of another
principal naming the same task hears nothing of it."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from approvals_e2e_support import (
    AGENT,
    AGENT_TOKEN,
    ALICE,
    ALICE_TOKEN,
    OTHER_AGENT,
    OTHER_AGENT_TOKEN,
    RECORDER,
    api_client,
    decide,
    marker,
)
from gateway_faces import FACES, Face, serve_gateway
from held_task_support import TaskFrames
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY
from support import serve_asgi, write_config
from surface_support import STARTUP_WAIT
from tasks_client import (
    call_as_task,
    listening_to_tasks,
    open_tasks_client,
    tasks_upstream,
)

from gateway.gateway import Gateway
from gateway.http.app import build_app

MODERN_FACES = [p for p in FACES if p.values[0].mode != "legacy"]
HTTP_MODERN = [p for p in MODERN_FACES if p.values[0].transport == "http"]
POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 2m}}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
"""


@pytest.mark.parametrize("face", MODERN_FACES)
async def test_a_2026_listen_stream_naming_a_task_hears_its_changes_to_the_end(
    tmp_path: Path, face: Face
) -> None:
    config = write_config(tmp_path, [tasks_upstream("legacy")], startup_wait=STARTUP_WAIT)
    frames = TaskFrames()
    with anyio.fail_after(90):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url, on_task=frames) as client,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "pushed"}))["taskId"]
            async with listening_to_tasks(client, [task_id, "lgt_nobody"]):
                first = await frames.until("working")
                await client.call_tool("jobs__release", {"key": "pushed"})
                ended = await frames.until("completed")
    assert {frame["taskId"] for frame in frames.heard} == {task_id}
    assert first["_meta"][SUBSCRIPTION_ID_META_KEY] == ended["_meta"][SUBSCRIPTION_ID_META_KEY]
    assert "resultType" not in ended
    assert ended["result"]["content"][0]["text"] == "job pushed done"


@pytest.mark.parametrize("face", HTTP_MODERN)
async def test_a_held_calls_task_is_pushed_to_its_owner_only_when_the_approval_resolves(
    tmp_path: Path, face: Face
) -> None:
    value = marker("pushed")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    log = str(tmp_path / "executions.jsonl")
    recorder = {"name": "recorder", "command": sys.executable, "args": [RECORDER, "--log", log]}
    auth = {
        "agents": [
            {"id": AGENT, "token": AGENT_TOKEN},
            {"id": OTHER_AGENT, "token": OTHER_AGENT_TOKEN},
        ],
        "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
    }
    policies = {"files": [str(policy)]}
    config = write_config(
        tmp_path, [recorder], policies=policies, auth=auth, startup_wait=STARTUP_WAIT
    )
    mine, theirs = TaskFrames(), TaskFrames()
    with anyio.fail_after(90):
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            api_client(base) as api,
            open_tasks_client(
                face, config=config, url=f"{base}/mcp", token=AGENT_TOKEN, on_task=mine
            ) as client,
            open_tasks_client(
                face, config=config, url=f"{base}/mcp", token=OTHER_AGENT_TOKEN, on_task=theirs
            ) as other,
        ):
            created = await call_as_task(client, "recorder__record", {"value": value})
            task_id = created["taskId"]
            approval = created["_meta"]["lockgate/pending"]["id"]
            async with (
                listening_to_tasks(other, [task_id]),
                listening_to_tasks(client, [task_id]),
            ):
                await mine.until("input_required")
                assert (await decide(api, approval, "approve")).status_code == 200
                ended = await mine.until("completed")
    assert ended["taskId"] == task_id
    assert ended["result"]["content"][0]["text"] == f"recorded {value}"
    assert theirs.heard == []
