"""A task's tool is checked against its pin again when the task completes, as ``pins.on_change``
says for direct calls: a definition changed meanwhile and quarantined holds the result back
(the task waits in ``input_required`` naming the pin review; ``tasks/result`` says so at once)
until an approver accepts it (then the task completes with its result) or the task is cancelled
(the result is discarded); with ``warn`` the result is delivered. task.created, task.status and
task.completed go on the bus and the audit log."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import HTTP_FACES, Face
from mcp.shared.exceptions import MCPError
from support import serve_asgi, write_config
from tasks_client import (
    call_as_task,
    modern,
    open_tasks_client,
    request,
    tasks_upstream,
    until_ended,
    until_status,
)

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import Principal


def _config(tmp_path: Path, **sections: Any) -> Path:
    return write_config(
        tmp_path,
        [tasks_upstream("legacy")],  # announces its changed tool list (2025-11-25)
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"path": str(tmp_path / "audit.db")}},
        startup_wait=60,  # a loaded machine may take seconds to spawn the upstream
        **sections,
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


async def _next(events: AsyncIterator[Event], kind: str) -> Event:
    async for event in events:
        if event.type == kind:
            return event
    raise AssertionError(f"the bus closed before {kind}")


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_result_quarantined_for_the_pin_review_is_delivered_once_the_change_is_accepted(
    tmp_path: Path, face: Face
) -> None:
    config = _config(tmp_path)
    with anyio.fail_after(90):
        async with (
            _served(config) as (gateway, url),
            open_tasks_client(face, config=config, url=url) as client,
            gateway.events.subscribe(["task.*", "tools.changed"]) as events,
        ):
            is_modern = modern(client)
            task_id = (await call_as_task(client, "jobs__job", {"key": "pin"}))["taskId"]
            await client.call_tool("jobs__change_job", {})
            await _next(events, "tools.changed")  # the gateway listed the changed definition
            await client.call_tool("jobs__release", {"key": "pin"})
            waiting = await until_status(client, task_id, "input_required")
            held = await _next(events, "task.status")
            while not held.data.get("quarantined"):
                held = await _next(events, "task.status")
            refused = None
            if not is_modern:  # tasks/result answers at once: the result waits for the review
                with pytest.raises(MCPError) as refused:
                    await request(client, "tasks/result", task_id)
            pin = (await gateway.pins.get("jobs__job")).changed_pin
            assert pin is not None
            await gateway.accept_pin("jobs__job", pin=pin, by=Principal(id="alice"))
            ended = await until_ended(client, task_id)
            completed = await _next(events, "task.completed")
            result = ended.get("result") or await request(client, "tasks/result", task_id)
    assert "quarantined the result for review" in waiting["statusMessage"]
    assert "lockgate pins accept jobs__job" in waiting["statusMessage"]
    assert "result" not in waiting
    assert held.data["task_id"] == task_id
    if refused is not None:
        assert refused.value.error.code == -32003
        assert "waits for that review" in refused.value.error.message
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == "job pin done"
    assert completed.data["pin_review"] == "accepted"
    assert completed.data["quarantined"] is False


async def test_a_cancelled_quarantined_task_discards_its_result(tmp_path: Path) -> None:
    config = _config(tmp_path)
    face = Face("http", "auto")  # 2026-07-28
    with anyio.fail_after(90):
        async with (
            _served(config) as (gateway, url),
            open_tasks_client(face, config=config, url=url) as client,
            gateway.events.subscribe(["task.completed", "tools.changed"]) as events,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "drop"}))["taskId"]
            await client.call_tool("jobs__change_job", {})
            await _next(events, "tools.changed")
            await client.call_tool("jobs__release", {"key": "drop"})
            await until_status(client, task_id, "input_required")
            await request(client, "tasks/cancel", task_id)
            ended = await request(client, "tasks/get", task_id)
            completed = await _next(events, "task.completed")
    assert ended["status"] == "cancelled"
    assert "result" not in ended
    assert completed.data["pin_review"] == "cancelled"


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_with_pins_on_change_warn_a_changed_tool_s_task_result_is_delivered(
    tmp_path: Path, face: Face
) -> None:
    config = _config(tmp_path, pins={"on_change": "warn"})
    with anyio.fail_after(60):
        async with (
            _served(config) as (gateway, url),
            open_tasks_client(face, config=config, url=url) as client,
            gateway.events.subscribe(["task.completed", "tools.changed"]) as events,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "warned"}))["taskId"]
            await client.call_tool("jobs__change_job", {})
            await _next(events, "tools.changed")
            await client.call_tool("jobs__release", {"key": "warned"})
            ended = await until_ended(client, task_id)
            completed = await _next(events, "task.completed")
            result = ended.get("result") or await request(client, "tasks/result", task_id)
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == "job warned done"
    assert "pin_review" not in completed.data


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
