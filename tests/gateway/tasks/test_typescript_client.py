"""The official TypeScript SDK client (``@modelcontextprotocol/sdk`` from the npm registry, its
2025-11-25 task support) calls server-everything's task tool through the gateway as a task,
follows it to its result and reads the task again by the gateway's id; HTTP and stdio. A held
call answered as a task: the TS client gets the task at once, an approver decides over the REST
API, the client's polling reads the outcome (approved: the result, the call run once; denied: the
refusal, never run).

The SDK and server-everything are installed into the module's tmp folder (own npm cache);
skipped only without npm.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import pytest
from anyio.streams.text import TextReceiveStream
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
from gateway_faces import DOWNSTREAM_AUTHORIZATION, serve_gateway
from paths import HARNESS
from support import serve_asgi, write_config
from surface_support import STARTUP_WAIT

from gateway.gateway import Gateway
from gateway.http.app import build_app

pytestmark = pytest.mark.timeout(360)  # the module's npm install counts towards its first test
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
    return write_config(tmp_path, [server], startup_wait=STARTUP_WAIT)


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


HELD_POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 2m}}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
"""


def _held_config(tmp_path: Path) -> Path:
    policy = tmp_path / "policy.yaml"
    policy.write_text(HELD_POLICY, encoding="utf-8")
    log = str(tmp_path / "executions.jsonl")
    recorder = {"name": "recorder", "command": sys.executable, "args": [RECORDER, "--log", log]}
    auth = {
        "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
        "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
    }
    policies = {"files": [str(policy)]}
    return write_config(
        tmp_path, [recorder], policies=policies, auth=auth, startup_wait=STARTUP_WAIT
    )


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_the_typescript_sdk_client_gets_a_held_call_as_a_task_an_approver_decides(
    node_prefix: Path, tmp_path: Path, decision: str
) -> None:
    value = marker(decision)
    node = shutil.which("node") or "node"
    config = _held_config(tmp_path)
    lines: list[dict[str, object]] = []
    with anyio.fail_after(120):
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            api_client(base) as api,
        ):
            script = str(node_prefix / SCRIPT.name)
            args = json.dumps({"value": value})
            argv = [node, script, "http", f"{base}/mcp", AGENT_TOKEN, "recorder__record", args]
            async with await anyio.open_process(argv, cwd=node_prefix) as process:
                assert process.stdout is not None
                async for line in _lines(process.stdout):
                    lines.append(json.loads(line))
                    created = lines[-1].get("created")
                    if isinstance(created, dict):  # decided while the TS client polls
                        approval = str(created["statusMessage"]).split()[3].rstrip(";")
                        answer = await decide(api, approval, decision, message="No.")
                        assert answer.status_code == 200, answer.text
            assert process.returncode == 0
    created, answer = lines[0]["created"], lines[-1]
    assert isinstance(created, dict)
    assert created["status"] == "input_required"
    assert answer["taskId"] == created["taskId"]
    messages = answer["messages"]
    assert isinstance(messages, list)
    ran = executions(tmp_path / "executions.jsonl", value)
    if decision == "approve":
        assert (messages[0], messages[-1]) == ("taskCreated", "result")
        assert (answer["status"], answer["text"], answer["isError"]) == (
            "completed",
            f"recorded {value}",
            False,
        )
        assert len(ran) == 1
    else:  # the refusal, read by tasks/result (or, decided before the client's first poll,
        # the SDK's own "Task ... failed" error for a failed task)
        assert answer["status"] == "failed"
        if messages[-1] == "result":
            assert answer["isError"] is True
            assert "No." in str(answer["text"])
        assert ran == []


async def _lines(stream: anyio.abc.ByteReceiveStream) -> AsyncIterator[str]:
    """The lines of ``stream`` as they come."""
    buffer = ""
    async for chunk in TextReceiveStream(stream):
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            if line.strip():
                yield line
