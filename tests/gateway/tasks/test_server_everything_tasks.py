"""server-everything's task tool (``simulate-research-query``, ``execution.taskSupport:
required``) through the gateway: listed, called as a task, polled to ``completed`` and its report
read, with the official Python SDK client: each era on one face, each face in one era
(``CROSSED_FACES``; server-everything takes seconds a case, and every client era with every
upstream era runs against ``tasks_server.py`` in ``test_tasks_proxied.py``).

``@modelcontextprotocol/server-everything`` is installed from the npm registry once per test run
(``npm_support``); the test is skipped only without npm.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from gateway_faces import CROSSED_FACES, Face, serve_gateway
from npm_support import NODE, npm_bin, npm_package
from support import write_config
from tasks_client import call_as_task, modern, open_tasks_client, request, until_ended

EVERYTHING = "@modelcontextprotocol/server-everything"
TOOL = "everything__simulate-research-query"


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server-everything's stdio entry point, installed from the npm registry."""
    return npm_bin(npm_package(tmp_path_factory, EVERYTHING), "mcp-server-everything")


@pytest.mark.parametrize("face", CROSSED_FACES)
async def test_server_everythings_research_task_completes_through_the_gateway(
    everything: Path, tmp_path: Path, face: Face
) -> None:
    entry = {"name": "everything", "transport": "stdio", "command": NODE,
             "args": [str(everything), "stdio"]}  # fmt: skip
    config = write_config(tmp_path, [entry])
    with anyio.fail_after(90):
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
    assert TOOL in listed
    assert created["status"] == "working"
    assert created["taskId"].startswith("lgt_")
    assert ended["status"] == "completed"
    assert "# Research Report: gateways" in report["content"][0]["text"]
