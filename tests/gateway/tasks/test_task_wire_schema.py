"""A held call's task on the wire is valid in each era: 2025-11-25 as the SDK's own types parse
it; 2026-07-28 against the Tasks extension's published JSON Schema (`tests/_harness/specs`),
whose ``InputRequiredTask`` requires ``inputRequests``: the created task, ``tasks/get`` and the
``notifications/tasks`` frame of a listen stream, a task waiting on an approver carrying none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema_rs
import pytest
from approvals_e2e_support import (
    AGENT_TOKEN,
    api_client,
    decide,
    marker,
)
from gateway_faces import HTTP_FACES, Face
from held_task_support import TaskFrames, held_recorder_config
from mcp import Client
from mcp_types import _v2025_11_25 as legacy_types
from paths import HARNESS
from support import serve_asgi
from tasks_client import (
    TASKS_EXTENSION,
    call_as_task,
    listening_to_tasks,
    modern,
    open_tasks_client,
    request,
)

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets._sdk_compat import unchecked_request

SCHEMA = json.loads((HARNESS / "specs" / "ext-tasks-schema.json").read_text(encoding="utf-8"))


def _errors(definition: str, instance: dict[str, Any]) -> list[str]:
    """Where ``instance`` breaks the schema's ``definition`` (none when it is valid)."""
    validator = jsonschema_rs.validator_for({**SCHEMA, "$ref": f"#/$defs/{definition}"})
    return [f"{e.instance_path}: {e.message}" for e in validator.iter_errors(instance)]


async def _created(client: Client, args: dict[str, Any]) -> dict[str, Any]:
    """The task-augmented call's answer: 2026-07-28's raw (``call_as_task`` parses it through
    the SDK's model, which drops a null ``ttlMs``); 2025-11-25's nested task."""
    if not modern(client):
        return await call_as_task(client, "recorder__record", args)
    params = {"name": "recorder__record", "arguments": args}
    raw = await unchecked_request(client.session, "tools/call", params, extension=TASKS_EXTENSION)
    return dict(raw)


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_held_calls_task_is_valid_on_the_wire_in_each_era(
    tmp_path: Path, face: Face
) -> None:
    config = held_recorder_config(tmp_path)
    frames = TaskFrames()
    with anyio.fail_after(90):
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            api_client(base) as api,
            open_tasks_client(
                face, config=config, url=f"{base}/mcp", token=AGENT_TOKEN, on_task=frames
            ) as client,
        ):
            created = await _created(client, {"value": marker("wire")})
            polled = await request(client, "tasks/get", created["taskId"])
            if face.mode != "legacy":
                async with listening_to_tasks(client, [created["taskId"]]):
                    await frames.until("input_required")
            approval = created["_meta"]["lockgate/pending"]["id"]
            assert (await decide(api, approval, "deny")).status_code == 200
    assert polled["status"] == "input_required"
    if face.mode == "legacy":
        legacy_types.Task.model_validate(created)  # call_as_task unwraps CreateTaskResult.task
        legacy_types.GetTaskResult.model_validate(polled)
        return
    assert _errors("CreateTaskResult", created) == []
    assert polled["inputRequests"] == {}  # nothing for the caller to answer: approvers decide
    assert _errors("GetTaskResult", polled) == []
    assert _errors("TaskStatusNotificationParams", frames.heard[0]) == []
    assert frames.heard[0]["status"] == "input_required"
    bare = {k: v for k, v in polled.items() if k != "inputRequests"}
    assert _errors("GetTaskResult", bare) != []  # the schema's requirement this test holds
