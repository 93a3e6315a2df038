"""2026-07-28's ``tasks/update`` through the gateway: a task waiting for input shows the server's
``inputRequests`` on ``tasks/get`` (only of the requests the server's config relays), the
client's answers reach the server running the task, and the task ends with them; an update of
a task that is not the caller's is answered as for a missing task."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import FACES, Face, serve_gateway
from mcp import Client
from mcp.shared.exceptions import MCPError
from paths import HARNESS
from support import write_config
from surface_support import STARTUP_WAIT
from tasks_client import TASKS_EXTENSION, call_as_task, open_tasks_client, request, until_ended

from toolsets._sdk_compat import unchecked_request

INPUT_SERVER = str(HARNESS / "upstreams" / "input_task_server.py")
MODERN_FACES = [p for p in FACES if p.values[0].mode != "legacy"]
GO = {"confirm": {"action": "accept", "content": {"go": True}}}


def _config(tmp_path: Path) -> Path:
    relayed = {"name": "deploys", "command": sys.executable, "args": [INPUT_SERVER]}
    relayed["client_requests"] = ["elicitation"]
    quiet = {"name": "quiet", "command": sys.executable, "args": [INPUT_SERVER]}
    return write_config(tmp_path, [relayed, quiet], startup_wait=STARTUP_WAIT)


async def _update(client: Client, task_id: str, answers: dict[str, Any]) -> dict[str, Any]:
    params = {"taskId": task_id, "inputResponses": answers}
    return await unchecked_request(
        client.session, "tasks/update", params, extension=TASKS_EXTENSION
    )


@pytest.mark.parametrize("face", MODERN_FACES)
async def test_an_input_required_task_is_answered_with_tasks_update_through_the_gateway(
    tmp_path: Path, face: Face
) -> None:
    config = _config(tmp_path)
    with anyio.fail_after(90):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url) as client,
        ):
            created = await call_as_task(client, "deploys__deploy", {"ref": "v1"})
            asked = await request(client, "tasks/get", created["taskId"])
            quiet = await call_as_task(client, "quiet__deploy", {"ref": "v2"})
            withheld = await request(client, "tasks/get", quiet["taskId"])
            acknowledged = await _update(client, created["taskId"], GO)
            ended = await until_ended(client, created["taskId"])
            with pytest.raises(MCPError) as stranger:
                await _update(client, "lgt_someone-elses", GO)
    assert created["status"] == "input_required"
    assert asked["inputRequests"]["confirm"]["method"] == "elicitation/create"
    assert withheld["status"] == "input_required"
    assert withheld["inputRequests"] == {}  # none of a kind its config relays
    assert acknowledged["resultType"] == "complete"
    assert ended["status"] == "completed"
    assert ended["result"]["content"][0]["text"] == "deployed v1"
    assert stranger.value.error.code == -32602
    assert "not found" in stranger.value.error.message
