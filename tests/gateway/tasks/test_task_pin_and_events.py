"""A task's tool is checked against its pin again when the task completes: a definition changed
meanwhile gets the result quarantined (the task fails naming the pin review); task.created,
task.status and task.completed go on the bus and the audit log."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_faces import HTTP_FACES, Face
from support import serve_asgi, write_config
from tasks_client import (
    call_as_task,
    modern,
    open_tasks_client,
    request,
    tasks_upstream,
    until_ended,
)

from gateway.gateway import Gateway
from gateway.http.app import build_app


def _config(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        [tasks_upstream("legacy")],  # announces its changed tool list (2025-11-25)
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"path": str(tmp_path / "audit.db")}},
    )


@contextlib.asynccontextmanager
async def _served(config: Path) -> AsyncIterator[tuple[Gateway, str]]:
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base:
        yield gateway, f"{base}/mcp"


def _audited(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT kind FROM audit ORDER BY seq").fetchall()
    return [row[0] for row in rows]


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_tool_changed_while_its_task_ran_gets_its_result_quarantined(
    tmp_path: Path, face: Face
) -> None:
    config = _config(tmp_path)
    with anyio.fail_after(60):
        async with (
            _served(config) as (gateway, url),
            open_tasks_client(face, config=config, url=url) as client,
            gateway.events.subscribe(["task.*", "tools.changed"]) as events,
        ):
            is_modern = modern(client)
            task_id = (await call_as_task(client, "jobs__job", {"key": "pin"}))["taskId"]
            await client.call_tool("jobs__change_job", {})
            async for event in events:  # the gateway listed the changed definition
                if event.type == "tools.changed":
                    break
            await client.call_tool("jobs__release", {"key": "pin"})
            ended = await until_ended(client, task_id)
            async for event in events:
                if event.type == "task.completed":
                    completed = event
                    break
    assert ended["status"] == "failed"
    assert "quarantined the result for review" in ended["statusMessage"]
    assert "lockgate pins accept jobs__job" in ended["statusMessage"]
    if is_modern:
        assert "result" not in ended
        assert ended["error"]["code"] == -32003
    assert completed.data["quarantined"] is True
    assert completed.data["task_id"] == task_id


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_task_events_reach_the_bus_and_the_audit_log(tmp_path: Path, face: Face) -> None:
    config = _config(tmp_path)
    with anyio.fail_after(60):
        async with (
            _served(config) as (gateway, url),
            open_tasks_client(face, config=config, url=url) as client,
            gateway.events.subscribe(["task.*"]) as events,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "ev"}))["taskId"]
            await client.call_tool("jobs__release", {"key": "ev"})
            ended = await until_ended(client, task_id)
            seen = []
            async for event in events:
                seen.append(event)
                if event.type == "task.completed":
                    break
            plain = await request(client, "tasks/get", task_id)
    assert ended["status"] == "completed"
    assert next(e.type for e in seen) == "task.created"
    assert seen[-1].data == {**seen[-1].data, "status": "completed", "quarantined": False}
    assert {e.data["task_id"] for e in seen} == {task_id}
    assert all(e.data["principal"] == "anonymous" for e in seen)
    assert "upstream-" not in json.dumps([dict(e.data) for e in seen])
    assert plain["status"] == "completed"
    audited = _audited(tmp_path / "audit.db")
    assert audited.count("task.created") == 1
    assert audited.count("task.completed") == 1
