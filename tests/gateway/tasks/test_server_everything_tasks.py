"""server-everything's task tool (``simulate-research-query``, ``execution.taskSupport:
required``) through the gateway, server-everything over stdio and over streamable HTTP: listed,
called as a task, polled to ``completed`` and its report read, with the official Python SDK
client: each era on one face, each face in one era
(``CROSSED_FACES``; server-everything takes seconds a case, and every client era with every
upstream era runs against ``tasks_server.py`` in ``test_tasks_proxied.py``).

``@modelcontextprotocol/server-everything`` is installed from the npm registry once per test run
(``npm_support``); the test is skipped only without npm.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import CROSSED_FACES, Face, running, serve_gateway
from npm_support import NODE
from support import free_port, write_config
from tasks_client import call_as_task, modern, open_tasks_client, request, until_ended

TOOL = "everything__simulate-research-query"


@contextlib.asynccontextmanager
async def _everything_upstream(everything: Path, transport: str) -> AsyncIterator[dict[str, Any]]:
    """server-everything's config entry on ``transport``; over streamable HTTP, running."""
    if transport == "stdio":
        yield {"name": "everything", "transport": "stdio", "command": NODE,
               "args": [str(everything), "stdio"]}  # fmt: skip
        return
    port = free_port()
    # server-everything takes its port from $PORT; `env` execs node, so terminating it stops node
    argv = ["env", f"PORT={port}", NODE, str(everything), "streamableHttp"]
    async with running([(argv, port)]):
        yield {"name": "everything", "transport": "http", "url": f"http://127.0.0.1:{port}/mcp"}


@pytest.mark.parametrize("face", CROSSED_FACES)
@pytest.mark.parametrize(
    "transport",
    [
        pytest.param("stdio", id="stdio upstream"),
        pytest.param("streamableHttp", id="streamable HTTP upstream"),
    ],
)
async def test_server_everythings_research_task_completes_through_the_gateway(
    everything: Path, tmp_path: Path, face: Face, transport: str
) -> None:
    with anyio.fail_after(90):
        async with _everything_upstream(everything, transport) as entry:
            config = write_config(tmp_path, [entry])
            listed, created, ended, report = await _research_task(config, face)
    assert TOOL in listed
    assert created["status"] == "working"
    assert created["taskId"].startswith("lgt_")
    assert ended["status"] == "completed"
    assert "# Research Report: gateways" in report["content"][0]["text"]


async def _research_task(
    config: Path, face: Face
) -> tuple[set[str], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The gateway served on ``config``, a tasks client on ``face``: the tools listed, the
    research task as created and as ended, and its report."""
    async with (
        serve_gateway(config) as url,
        open_tasks_client(face, config=config, url=url) as client,
    ):
        is_modern = modern(client)
        listed = {tool.name for tool in (await client.list_tools()).tools}
        created = await call_as_task(client, TOOL, {"topic": "gateways"})
        ended = await until_ended(client, created["taskId"])
        if is_modern:
            report = ended["result"]
        else:
            report = await request(client, "tasks/result", created["taskId"])
    return listed, created, ended, report
