"""A task-augmented call has one ``tool.result``, published when its task ends with the task's
outcome (its creation is ``task.created``), on the bus and the audit log; and that event masks
the values at the policy's ``redact`` paths of the call's arguments as a direct call's does,
as do the task's own events (the upstream's status message may quote an argument)."""

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
from mcp import Client
from support import echo_upstream, serve_asgi, write_config
from tasks_client import call_as_task, open_tasks_client, request, tasks_upstream, until_ended

from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

POLICY = Path(__file__).parent / "fixtures" / "redact_keys.yaml"
SECRET = "hunter2-opens-the-vault"
"""A value at a ``redact`` path (``args.key``): the job's result and status message quote it."""


@contextlib.asynccontextmanager
async def _served(tmp_path: Path, face: Face) -> AsyncIterator[tuple[Gateway, Client]]:
    config = write_config(
        tmp_path,
        [tasks_upstream(), echo_upstream()],
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"path": str(tmp_path / "audit.db")}},
        policies={"files": [str(POLICY)]},
        startup_wait=60,  # a loaded machine may take seconds to spawn the upstreams
    )
    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_tasks_client(face, config=config, url=f"{base}/mcp") as client,
    ):
        yield gateway, client


async def _until_task_ended(events: Subscription, task_id: str) -> list[Event]:
    """The events up to the task's ``task.completed`` (its ``tool.result`` goes out first)."""
    seen: list[Event] = []
    async for event in events:
        seen.append(event)
        if event.type == "task.completed" and event.data["task_id"] == task_id:
            return seen
    raise AssertionError(f"the bus closed before task {task_id} ended")


def _audited(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every audit entry as (kind, event data); read once the gateway stopped (all written)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT kind, body FROM audit ORDER BY seq").fetchall()
    return [(kind, json.loads(body).get("data", {})) for kind, body in rows]


def _created_call(seen: list[Event]) -> str:
    call = next(e for e in seen if e.type == "tool.call" and e.data["tool"] == "jobs__job")
    return str(call.data["call_id"])


@pytest.mark.parametrize("face", HTTP_FACES)
@pytest.mark.parametrize("outcome", ["completed", "cancelled"])
async def test_a_task_call_has_one_tool_result_carrying_how_its_task_ended(
    tmp_path: Path, face: Face, outcome: str
) -> None:
    with anyio.fail_after(90):
        async with (
            _served(tmp_path, face) as (gateway, client),
            gateway.events.subscribe(["tool.*", "task.*"]) as events,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "one"}))["taskId"]
            if outcome == "completed":
                await client.call_tool("jobs__release", {"key": "one"})
            else:
                await request(client, "tasks/cancel", task_id)
            ended = await until_ended(client, task_id)
            seen = await _until_task_ended(events, task_id)
    assert ended["status"] == outcome
    call_id = _created_call(seen)
    results = [e for e in seen if e.type == "tool.result" and e.data["call_id"] == call_id]
    assert len(results) == 1, [e.data["response"] for e in results]
    (result,) = results
    text = result.data["response"]["content"][0]["text"]
    if outcome == "completed":
        assert (text, result.data["is_error"]) == ("job one done", False)
    else:
        assert result.data["is_error"] is True
        assert "cancel" in text.lower()
    audited = [d for kind, d in _audited(tmp_path / "audit.db") if kind == "tool.result"]
    assert [d["response"] for d in audited if d["call_id"] == call_id] == [result.data["response"]]


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_redacted_argument_quoted_by_a_task_result_is_masked_like_a_direct_calls(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(90):
        async with (
            _served(tmp_path, face) as (gateway, client),
            gateway.events.subscribe(["tool.*", "task.*"]) as events,
        ):
            direct = await client.call_tool("echo__echo", {"text": SECRET})
            task_id = (await call_as_task(client, "jobs__job", {"key": SECRET}))["taskId"]
            await client.call_tool("jobs__release", {"key": SECRET})
            ended = await until_ended(client, task_id)
            got = ended.get("result") or await request(client, "tasks/result", task_id)
            seen = await _until_task_ended(events, task_id)
    # The caller reads the values; only the event and audit copies are masked.
    assert SECRET in str(direct.content)
    assert got["content"][0]["text"] == f"job {SECRET} done"
    echoed = next(e for e in seen if e.type == "tool.result" and e.data["tool"] == "echo__echo")
    assert SECRET not in json.dumps(echoed.data)  # the direct call's, for comparison
    call_id = _created_call(seen)
    (result,) = [e for e in seen if e.type == "tool.result" and e.data["call_id"] == call_id]
    assert result.data["response"]["content"][0]["text"] == "job [REDACTED] done"
    assert "args" not in result.data  # a tool.result carries no arguments (tool.call does)
    leaked = [e.type for e in seen if SECRET in json.dumps(e.data)]
    assert leaked == []
    audited = _audited(tmp_path / "audit.db")
    assert [kind for kind, data in audited if SECRET in json.dumps(data)] == []
    assert any(kind == "task.completed" for kind, _ in audited)
