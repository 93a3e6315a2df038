"""A task's result passes the chain's result steps once, when the task completes, as a direct
call's result does: content inspection of results (a credential redacted), resource links
served as the gateway's (``lockgate://``), the output-schema check, and the ``tool.result``
event (carrying the creating call's id) on the bus and the audit log."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import HTTP_FACES, Face
from inspector_support import AWS_KEY
from mcp import Client
from support import serve_asgi, write_config
from tasks_client import (
    call_as_task,
    modern,
    open_tasks_client,
    request,
    tasks_upstream,
    until_ended,
)

from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app

SECRETS = {"type": "builtin", "detectors": ["credential"], "direction": "results"}


@contextlib.asynccontextmanager
async def _served(tmp_path: Path, face: Face) -> AsyncIterator[tuple[Gateway, Client]]:
    config = write_config(
        tmp_path,
        [tasks_upstream()],
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"path": str(tmp_path / "audit.db")}},
        inspectors={"secrets": SECRETS | {"tools": ["jobs__job"]}},
        startup_wait=60,  # a loaded machine may take seconds to spawn the upstream
    )
    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_tasks_client(face, config=config, url=f"{base}/mcp") as client,
    ):
        yield gateway, client


async def _result(client: Client, task_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    ended = await until_ended(client, task_id)
    if modern(client) or ended["status"] != "completed":
        return ended, dict(ended.get("result") or {})
    return ended, await request(client, "tasks/result", task_id)


def _final(event: Event) -> bool:
    """The task's own ``tool.result`` (not the one of the call that created the task)."""
    return (
        event.type == "tool.result"
        and event.data["tool"] == "jobs__job"
        and "Task created" not in str(event.data["response"])
    )


def _audited(path: Path, kind: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT body FROM audit WHERE kind = ? ORDER BY seq", (kind,))
        return [row[0] for row in rows.fetchall()]


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_task_result_is_redacted_its_links_served_and_reported_once(
    tmp_path: Path, face: Face
) -> None:
    content = [
        {"type": "text", "text": f"key {AWS_KEY} here"},
        {"type": "resource_link", "uri": "file:///tmp/report.txt", "name": "report"},
    ]
    with anyio.fail_after(90):
        async with (
            _served(tmp_path, face) as (gateway, client),
            gateway.events.subscribe(["tool.*"]) as events,
        ):
            task_id = (await call_as_task(client, "jobs__job", {"key": "red"}))["taskId"]
            await client.call_tool("jobs__release", {"key": "red", "content": content})
            ended, result = await _result(client, task_id)
            again = await request(client, "tasks/get", task_id)
            seen: list[Event] = []
            async for event in events:
                seen.append(event)
                if _final(event):
                    break
    assert ended["status"] == "completed"
    assert result["content"][0]["text"] == "key [REDACTED:credential] here"
    assert result["content"][1]["uri"] == "lockgate://jobs/file:///tmp/report.txt"
    assert result["_meta"]["lockgate/findings"][0]["kind"] == "credential"
    assert AWS_KEY not in str(again)
    created = next(e for e in seen if e.type == "tool.call" and e.data["tool"] == "jobs__job")
    final = seen[-1]
    assert final.data["call_id"] == created.data["call_id"]
    assert final.data["response"]["content"][0]["text"] == "key [REDACTED:credential] here"
    assert final.data["findings"][0]["kind"] == "credential"
    audited = _audited(tmp_path / "audit.db", "tool.result")
    assert any("REDACTED:credential" in data for data in audited)
    assert not any(AWS_KEY in data for data in audited)


async def test_a_task_result_off_its_output_schema_fails_and_one_on_it_completes(
    tmp_path: Path,
) -> None:
    face = Face("http", "auto")  # 2026-07-28: the check does not differ by era
    with anyio.fail_after(90):
        async with _served(tmp_path, face) as (_gateway, client):
            bad = (await call_as_task(client, "jobs__measure", {"key": "bad"}))["taskId"]
            good = (await call_as_task(client, "jobs__measure", {"key": "good"}))["taskId"]
            await client.call_tool("jobs__release", {"key": "bad", "structured": {"size": "big"}})
            await client.call_tool("jobs__release", {"key": "good", "structured": {"size": 3}})
            failed, _ = await _result(client, bad)
            completed, result = await _result(client, good)
    assert failed["status"] == "failed"
    assert "Invalid structured content returned by tool 'jobs__measure'" in failed["statusMessage"]
    assert failed["error"]["code"] == -32603
    assert completed["status"] == "completed"
    assert result["structuredContent"] == {"size": 3}
