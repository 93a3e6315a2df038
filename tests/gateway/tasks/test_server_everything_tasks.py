"""server-everything's task tool (``simulate-research-query``, ``execution.taskSupport:
required``) through the gateway: listed, called as a task, polled to ``completed`` and its report
read, in both eras on both faces, with the official Python SDK client.

``@modelcontextprotocol/server-everything`` is installed from the npm registry into the test's
tmp folder (own npm cache there; about 5 s); the test is skipped only without npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest
from gateway_faces import FACES, Face, serve_gateway
from support import write_config
from tasks_client import call_as_task, modern, open_tasks_client, request, until_ended

EVERYTHING = "@modelcontextprotocol/server-everything"
NPM = shutil.which("npm")
TOOL = "everything__simulate-research-query"


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server-everything's stdio entry point, installed from the npm registry."""
    if NPM is None:
        pytest.skip(f"npm is not installed: {EVERYTHING} needs Node.js")
    prefix = tmp_path_factory.mktemp("npm")
    command = [NPM, "install", "--prefix", str(prefix), "--cache", str(prefix / ".npm-cache")]
    command += ["--no-audit", "--no-fund", "--loglevel", "error", EVERYTHING]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"npm install {EVERYTHING} failed:\n{done.stderr}"
    package = prefix / "node_modules" / EVERYTHING
    bins = json.loads((package / "package.json").read_text(encoding="utf-8"))["bin"]
    return package / bins["mcp-server-everything"]


@pytest.mark.parametrize("face", FACES)
async def test_server_everythings_research_task_completes_through_the_gateway(
    everything: Path, tmp_path: Path, face: Face
) -> None:
    node = shutil.which("node") or "node"
    entry = {"name": "everything", "transport": "stdio", "command": node,
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
