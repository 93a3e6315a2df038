"""Task-augmented calls through the gateway to an upstream built with the MCP SDK's task types
(`tasks_server.py`): created, polled, completed and read, cancelled; both downstream eras, both
faces, and an upstream of either era."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from gateway_faces import FACES, HTTP_FACES, Face, running, serve_gateway
from mcp.shared.exceptions import MCPError
from support import free_port, write_config
from tasks_client import (
    TASKS_SERVER,
    call_as_task,
    modern,
    open_tasks_client,
    request,
    tasks_upstream,
    until_ended,
)

TRANSLATED = [
    pytest.param(p.values[0], era, id=f"{p.id}-{era}")
    for p in FACES
    for era in ("legacy", "modern")
    if p.id.startswith("http") or not p.id.endswith(era)
]
"""Every client era with every upstream era on HTTP; on stdio, each client era with the other
upstream era: the translation between eras does not depend on the face, so stdio needs only to
carry each era once (each stdio case starts a gateway process)."""


@pytest.mark.parametrize(("face", "upstream_era"), TRANSLATED)
async def test_a_task_is_created_polled_completed_and_its_result_read(
    tmp_path: Path, face: Face, upstream_era: str
) -> None:
    config = write_config(tmp_path, [tasks_upstream(upstream_era)])
    with anyio.fail_after(60):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url) as client,
        ):
            created = await call_as_task(client, "jobs__job", {"key": "k1"}, ttl=60_000)
            task_id = created["taskId"]
            working = await request(client, "tasks/get", task_id)
            released = await client.call_tool("jobs__release", {"key": "k1"})
            ended = await until_ended(client, task_id)
            if not modern(client):
                result = await request(client, "tasks/result", task_id)
            else:
                result = ended["result"]
    assert created["status"] == "working"
    assert task_id.startswith("lgt_")
    assert "upstream-" not in task_id
    assert working["status"] == "working"
    assert released.content[0].text == "1"
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == "job k1 done"


@pytest.mark.parametrize("face", [p for p in FACES if p.values[0].mode == "legacy"])
async def test_a_2025_session_hears_its_tasks_status_under_the_gateway_id(
    tmp_path: Path, face: Face
) -> None:
    config = write_config(tmp_path, [tasks_upstream("legacy")])
    heard: list[types.TaskStatusNotificationParams] = []
    completed = anyio.Event()

    async def listen(status: types.TaskStatusNotificationParams) -> None:
        heard.append(status)
        if status.status == "completed":
            completed.set()

    with anyio.fail_after(60):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url, on_status=listen) as client,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "told"}))["taskId"]
            await client.call_tool("jobs__release", {"key": "told"})
            await completed.wait()
    assert {note.task_id for note in heard} == {task_id}
    assert heard[-1].status == "completed"


LEGACY_FACES = [p for p in FACES if p.values[0].mode == "legacy"]


@pytest.mark.parametrize("face", LEGACY_FACES)
async def test_a_task_call_to_a_tool_without_task_support_is_a_task_that_already_ended(
    tmp_path: Path, face: Face
) -> None:
    config = write_config(tmp_path, [tasks_upstream("legacy")])
    with anyio.fail_after(60):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url) as client,
        ):
            created = await call_as_task(client, "jobs__release", {"key": "none"})
            result = await request(client, "tasks/result", created["taskId"])
    assert created["status"] == "completed"
    assert created["taskId"].startswith("lgt_")
    assert result["content"][0]["text"] == "0"


@pytest.mark.parametrize("face", LEGACY_FACES)
async def test_a_task_past_its_ttl_is_answered_as_missing(tmp_path: Path, face: Face) -> None:
    config = write_config(tmp_path, [tasks_upstream("legacy")])
    with anyio.fail_after(60):
        async with (
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url) as client,
        ):
            kept = await call_as_task(client, "jobs__job", {"key": "kept"}, ttl=600_000)
            brief = await call_as_task(client, "jobs__job", {"key": "brief"}, ttl=1)
            with pytest.raises(MCPError) as gone:
                await request(client, "tasks/get", brief["taskId"])
            still = await request(client, "tasks/get", kept["taskId"])
    assert gone.value.error.code == -32602
    assert "not found" in gone.value.error.message
    assert still["status"] == "working"


@pytest.mark.parametrize("upstream_era", ["legacy", "modern"])
@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_task_runs_on_an_http_upstream(
    tmp_path: Path, face: Face, upstream_era: str
) -> None:
    port = free_port()
    argv = [sys.executable, TASKS_SERVER, "--era", upstream_era, "--http", str(port)]
    server = {"name": "jobs", "transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}
    config = write_config(tmp_path, [server])
    with anyio.fail_after(60):
        async with (
            running([(argv, port)]),
            serve_gateway(config) as url,
            open_tasks_client(face, config=config, url=url) as client,
        ):
            is_modern = modern(client)
            task_id = (await call_as_task(client, "jobs__job", {"key": "net"}))["taskId"]
            await client.call_tool("jobs__release", {"key": "net"})
            ended = await until_ended(client, task_id)
            result = (
                ended["result"] if is_modern else await request(client, "tasks/result", task_id)
            )
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == "job net done"
