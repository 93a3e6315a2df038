"""The official TypeScript SDK client (``@modelcontextprotocol/sdk`` from the npm registry, its
2025-11-25 task support) calls server-everything's task tool through the gateway as a task,
follows it to its result and reads the task again by the gateway's id; HTTP and stdio.

The SDK and server-everything are installed into the module's tmp folder (own npm cache);
skipped only without npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from gateway_faces import DOWNSTREAM_AUTHORIZATION, serve_gateway
from paths import HARNESS
from support import write_config

NPM = shutil.which("npm")
PACKAGES = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server-everything")
SCRIPT = HARNESS / "node" / "ts_tasks_client.mjs"
TOOL = "everything__simulate-research-query"


@pytest.fixture(scope="module")
def node_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding both npm packages and the client script (so its imports resolve)."""
    if NPM is None:
        pytest.skip("npm is not installed: the TypeScript SDK needs Node.js")
    prefix = tmp_path_factory.mktemp("ts")
    command = [NPM, "install", "--prefix", str(prefix), "--cache", str(prefix / ".npm-cache")]
    command += ["--no-audit", "--no-fund", "--loglevel", "error", *PACKAGES]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, f"npm install failed:\n{done.stderr}"
    shutil.copy(SCRIPT, prefix / SCRIPT.name)
    return prefix


def _config(tmp_path: Path, prefix: Path) -> Path:
    package = prefix / "node_modules" / "@modelcontextprotocol" / "server-everything"
    entry = json.loads((package / "package.json").read_text(encoding="utf-8"))["bin"]
    server = {
        "name": "everything",
        "transport": "stdio",
        "command": shutil.which("node") or "node",
        "args": [str(package / entry["mcp-server-everything"]), "stdio"],
    }
    return write_config(tmp_path, [server])


async def _run_client(prefix: Path, *args: str) -> dict[str, object]:
    node = shutil.which("node") or "node"
    argv = [node, str(prefix / SCRIPT.name), *args, TOOL, json.dumps({"topic": "gateways"})]
    done = await anyio.run_process(argv, check=False, cwd=prefix)
    assert done.returncode == 0, done.stderr.decode()
    answer: dict[str, object] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_the_typescript_sdk_client_runs_a_task_through_the_gateway(
    node_prefix: Path, tmp_path: Path, transport: str
) -> None:
    config = _config(tmp_path, node_prefix)
    token = DOWNSTREAM_AUTHORIZATION.removeprefix("Bearer ")
    with anyio.fail_after(120):
        if transport == "http":
            async with serve_gateway(config) as url:
                answer = await _run_client(node_prefix, "http", url, token)
        else:
            answer = await _run_client(node_prefix, "stdio", sys.executable, str(config))
    messages = answer["messages"]
    assert isinstance(messages, list)
    assert messages[0] == "taskCreated"
    assert messages[-1] == "result"
    assert str(answer["taskId"]).startswith("lgt_")
    assert answer["status"] == "completed"
    assert "# Research Report: gateways" in str(answer["text"])
