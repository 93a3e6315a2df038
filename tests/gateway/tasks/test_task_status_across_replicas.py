"""Task status pushed across replicas: a 2026-07-28 listen stream open on replica B hears the
changes of a held call's task created on replica A and decided there (two gateways on one
PostgreSQL; the task events reach B through the cluster's event log), to the end."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import pytest
from approvals_e2e_support import (
    AGENT_TOKEN,
    api_client,
    decide,
    marker,
)
from gateway_faces import FACES, Face
from held_task_support import TaskFrames, held_recorder_config
from pg_support import fresh_schema, pg_storage
from support import serve_asgi
from tasks_client import call_as_task, listening_to_tasks, open_tasks_client

from gateway.gateway import Gateway
from gateway.http.app import build_app

HTTP_MODERN = [p for p in FACES if p.values[0].mode != "legacy" and p.values[0].transport == "http"]


@pytest.mark.parametrize("face", HTTP_MODERN)
async def test_a_listen_stream_on_another_replica_hears_a_held_tasks_changes_to_the_end(
    tmp_path: Path, face: Face
) -> None:
    value = marker("replicas")
    on_b = TaskFrames()
    with anyio.fail_after(120):
        async with fresh_schema() as schema, contextlib.AsyncExitStack() as stack:
            config = held_recorder_config(tmp_path, storage=pg_storage(schema))
            base_a, base_b = [
                await stack.enter_async_context(serve_asgi(build_app(Gateway.from_config(config))))
                for _ in range(2)
            ]
            api = await stack.enter_async_context(api_client(base_a))
            a = await stack.enter_async_context(
                open_tasks_client(face, config=config, url=f"{base_a}/mcp", token=AGENT_TOKEN)
            )
            b = await stack.enter_async_context(
                open_tasks_client(
                    face, config=config, url=f"{base_b}/mcp", token=AGENT_TOKEN, on_task=on_b
                )
            )
            created = await call_as_task(a, "recorder__record", {"value": value})
            async with listening_to_tasks(b, [created["taskId"]]):
                await on_b.until("input_required")
                approval = created["_meta"]["lockgate/pending"]["id"]
                assert (await decide(api, approval, "approve")).status_code == 200
                ended = await on_b.until("completed")
    assert ended["taskId"] == created["taskId"]
    assert ended["result"]["content"][0]["text"] == f"recorded {value}"
    assert [frame["status"] for frame in on_b.heard].count("completed") == 1
