"""Tasks outlive the gateway that followed them: a task whose gateway stopped is resumed by the
next gateway on the same store (a restart), or by another replica (PostgreSQL), under a lease
only one of them wins; a held call answered as a task whose gateway stopped before the decision
still ends when decided, its call run once. One era and face each: the durability does not
differ by era."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from approvals_e2e_support import (
    AGENT,
    AGENT_TOKEN,
    ALICE,
    ALICE_TOKEN,
    RECORDER,
    api_client,
    decide,
    executions,
    marker,
)
from gateway_faces import Face, running
from mcp import Client
from pg_support import fresh_schema, pg_storage
from support import free_port, serve_asgi, write_config
from tasks_client import (
    TASKS_SERVER,
    call_as_task,
    open_tasks_client,
    tasks_upstream,
    until_ended,
)

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.sqlite.tasks import SQLiteTaskStore
from gateway.tasks.record import TaskRecord, new_task_id

FACE = Face("http", "auto")  # 2026-07-28
POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 5m}}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
"""


@contextlib.asynccontextmanager
async def _jobs_over_http() -> AsyncIterator[dict[str, Any]]:
    """The tasks test server on its own, over HTTP: its tasks outlive any gateway."""
    port = free_port()
    argv = [sys.executable, TASKS_SERVER, "--http", str(port)]
    async with running([(argv, port)]):
        yield {"name": "jobs", "transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}


@contextlib.asynccontextmanager
async def _gateway(config: Path, token: str | None = None) -> AsyncIterator[tuple[Client, str]]:
    """A gateway on ``config`` served over HTTP, and a tasks client on it; its base URL."""
    async with (
        serve_asgi(build_app(Gateway.from_config(config))) as base,
        open_tasks_client(FACE, config=config, url=f"{base}/mcp", token=token) as client,
    ):
        yield client, base


async def test_a_task_whose_gateway_restarted_is_followed_to_its_end(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with _jobs_over_http() as jobs:
            sqlite = {"store": "sqlite", "path": str(tmp_path / "pending.db")}
            config = write_config(tmp_path, [jobs], approvals=sqlite, startup_wait=60)
            async with _gateway(config) as (client, _base):
                task_id = (await call_as_task(client, "jobs__job", {"key": "restart"}))["taskId"]
            async with _gateway(config) as (client, _base):  # the restarted gateway
                await client.call_tool("jobs__release", {"key": "restart"})
                ended = await until_ended(client, task_id)
    assert ended["status"] == "completed"
    assert ended["result"]["content"][0]["text"] == "job restart done"


async def test_a_replica_resumes_the_task_of_a_replica_that_stopped(tmp_path: Path) -> None:
    with anyio.fail_after(120):
        async with _jobs_over_http() as jobs, fresh_schema() as schema:
            config = write_config(tmp_path, [jobs], storage=pg_storage(schema), startup_wait=60)
            async with _gateway(config) as (b, _base):
                async with _gateway(config) as (a, _base):
                    task_id = (await call_as_task(a, "jobs__job", {"key": "moved"}))["taskId"]
                await b.call_tool("jobs__release", {"key": "moved"})  # A is gone: B follows
                ended = await until_ended(b, task_id)
    assert ended["status"] == "completed"
    assert ended["result"]["content"][0]["text"] == "job moved done"


def _held_config(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "executions.jsonl"
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    recorder = {
        "name": "recorder",
        "transport": "stdio",
        "command": sys.executable,
        "args": [RECORDER, "--log", str(log)],
    }
    config = write_config(
        tmp_path,
        [recorder],
        policies={"files": [str(policy)]},
        auth={
            "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
            "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
        },
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        startup_wait=60,
    )
    return config, log


async def test_a_held_task_whose_gateway_stopped_before_the_decision_runs_once_when_approved(
    tmp_path: Path,
) -> None:
    config, log = _held_config(tmp_path)
    value = marker("restarted")
    with anyio.fail_after(120):
        async with _gateway(config, AGENT_TOKEN) as (client, _base):
            created = await call_as_task(client, "recorder__record", {"value": value})
        approval = created["_meta"]["lockgate/pending"]["id"]
        async with (
            _gateway(config, AGENT_TOKEN) as (client, base),
            api_client(base) as api,
        ):
            assert (await decide(api, approval, "approve")).status_code == 200
            ended = await until_ended(client, created["taskId"])
    assert created["status"] == "input_required"
    assert ended["status"] == "completed"
    assert ended["result"]["content"][0]["text"] == f"recorded {value}"
    assert len(executions(log, value)) == 1


async def test_a_resumed_task_of_a_server_no_longer_configured_fails_naming_it(
    tmp_path: Path,
) -> None:
    sqlite = {"store": "sqlite", "path": str(tmp_path / "pending.db")}
    config = write_config(tmp_path, [tasks_upstream()], approvals=sqlite, startup_wait=60)
    now = time.time()
    orphan = TaskRecord(
        id=new_task_id(),
        upstream="retired",
        upstream_task_id="upstream-1",
        principal="anonymous",
        tenant=None,
        session_id=None,
        tool="retired__job",
        created_at=now,
        updated_at=now,
        lease_owner="a-crashed-replica",
        lease_until=now - 1,
    )
    store = SQLiteTaskStore(tmp_path / "pending.db")
    try:
        await store.put(orphan)
    finally:
        await store.close()
    with anyio.fail_after(60):
        async with _gateway(config) as (client, _base):
            ended = await until_ended(client, orphan.id)
    assert ended["status"] == "failed"
    assert "Server 'retired' is not configured" in ended["statusMessage"]
