"""A task created on replica A is answered by replica B: both gateways share one PostgreSQL
schema, each with its own upstream process; A follows the task and writes every change, B reads
them (``tasks/get``, a blocking ``tasks/result``) and records a cancel that A passes on."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_faces import HTTP_FACES, Face
from mcp import Client
from pg_support import fresh_schema, pg_storage
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


@contextlib.asynccontextmanager
async def _replicas(tmp_path: Path, face: Face) -> AsyncIterator[tuple[Client, Client]]:
    async with fresh_schema() as schema, contextlib.AsyncExitStack() as stack:
        storage = pg_storage(schema)
        config = write_config(tmp_path, [tasks_upstream()], storage=storage, startup_wait=60)
        clients = []
        for _name in ("a", "b"):
            base = await stack.enter_async_context(
                serve_asgi(build_app(Gateway.from_config(config)))
            )
            opened = open_tasks_client(face, config=config, url=f"{base}/mcp")
            clients.append(await stack.enter_async_context(opened))
        yield clients[0], clients[1]


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_task_created_on_replica_a_is_answered_on_replica_b(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(90):
        async with _replicas(tmp_path, face) as (a, b):
            is_modern = modern(a)
            task_id = (await call_as_task(a, "jobs__job", {"key": "shared"}))["taskId"]
            seen_on_b = await request(b, "tasks/get", task_id)
            await a.call_tool("jobs__release", {"key": "shared"})  # A's upstream runs the job
            ended_on_b = await until_ended(b, task_id)
            if not is_modern:
                result = await request(b, "tasks/result", task_id)
            else:
                result = ended_on_b["result"]
    assert seen_on_b["taskId"] == task_id
    assert seen_on_b["status"] == "working"
    assert ended_on_b["status"] == "completed"
    assert result["content"][0]["text"] == "job shared done"


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_cancel_recorded_on_replica_b_reaches_the_upstream_of_replica_a(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(90):
        async with _replicas(tmp_path, face) as (a, b):
            task_id = (await call_as_task(a, "jobs__job", {"key": "halt"}))["taskId"]
            await request(b, "tasks/cancel", task_id)
            ended_on_a = await until_ended(a, task_id)
            released = await a.call_tool("jobs__release", {"key": "halt"})
    assert ended_on_a["status"] == "cancelled"
    assert released.content[0].text == "0"  # A's upstream had cancelled the job
