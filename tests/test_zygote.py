"""Under pytest, a test upstream runs as a fork of the pytest process's zygote
(tests/_harness/zygote.py), behind the launcher its caller started: still a separate process
on the caller's pipes, ended with its launcher, exiting as it would have on its own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from handoff import socket_path
from support import ECHO_SERVER

ENV_SERVER = str(Path(ECHO_SERVER).parent / "env_server.py")
pytestmark = pytest.mark.skipif(
    os.environ.get("LOCKGATE_TEST_NO_ZYGOTE") == "1", reason="LOCKGATE_TEST_NO_ZYGOTE=1: no zygote"
)
SDK_ENV = {key: os.environ[key] for key in ("HOME", "PATH") if key in os.environ}
"""What the SDK's stdio client passes on (its default environment has no ``PYTHON*``)."""


@pytest.fixture(autouse=True)
def zygote_listening() -> None:
    """The zygote listens before pytest goes on (`zygote.start` waits for it to say so)."""
    assert listening()


def listening() -> bool:
    return os.path.exists(socket_path(os.getpid()))


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (an ended process waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def parent_command(pid: int) -> bytes:
    """The command line of the parent of process ``pid``."""
    parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
    return Path(f"/proc/{parent}/cmdline").read_bytes()


async def _message(process: Process, buffer: bytearray, id: int) -> dict[str, Any]:
    assert process.stdout is not None
    while True:
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            message = json.loads(line)
            if message.get("id") == id:
                return dict(message)
        buffer += await process.stdout.receive()


@asynccontextmanager
async def env_server(**env: str) -> AsyncIterator[tuple[Process, int]]:
    """env_server.py started as the gateway starts it; with its pid, told by the server."""
    argv = [sys.executable, ENV_SERVER, "WATCHED"]
    env = SDK_ENV | {"WATCHED": "seen"} | env
    async with await anyio.open_process(argv, env=env, start_new_session=True) as process:
        assert process.stdin is not None
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}},
        ]
        buffer = bytearray()
        with anyio.fail_after(60):
            await process.stdin.send(b"".join(json.dumps(r).encode() + b"\n" for r in requests))
            result = (await _message(process, buffer, 2))["result"]
        answer = json.loads(result["content"][0]["text"])
        assert answer["value"] == "seen"
        try:
            yield process, answer["pid"]
        finally:
            if process.returncode is None:
                process.kill()


async def _gone(process: Process, pid: int) -> None:
    """Wait for the server behind ``process`` to end: its stdout (it holds the only write end)
    reaches EOF, which it closes only by exiting."""
    assert process.stdout is not None
    with anyio.fail_after(60):
        with contextlib.suppress(anyio.EndOfStream):
            while True:
                await process.stdout.receive()
    assert not alive(pid)


async def test_a_server_runs_in_a_fork_of_the_zygote_and_ends_at_stdin_eof() -> None:
    async with env_server() as (process, pid):
        assert pid != process.pid
        assert b"zygote.py" in parent_command(pid)
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(60):
            assert await process.wait() == 0
        await _gone(process, pid)


async def test_without_the_zygote_the_server_is_the_started_process() -> None:
    async with env_server(LOCKGATE_TEST_NO_ZYGOTE="1") as (process, pid):
        assert pid == process.pid


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_to_the_launcher_ends_the_server_by_that_signal(signum: int) -> None:
    async with env_server() as (process, pid):
        os.killpg(process.pid, signum)  # as the SDK stops a server that did not exit
        with anyio.fail_after(60):
            code = await process.wait()
        assert not alive(pid)  # the launcher ended after its server
    assert code == -signum


async def test_a_killed_launcher_takes_its_server_with_it() -> None:
    async with env_server() as (process, pid):
        process.kill()
        with anyio.fail_after(60):
            assert await process.wait() == -signal.SIGKILL
        await _gone(process, pid)


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["without", "with"])
async def test_a_failing_server_exits_and_writes_as_it_would_alone(zygote: str) -> None:
    argv = [sys.executable, ECHO_SERVER, "--era", "bogus"]
    env = SDK_ENV | {"LOCKGATE_TEST_NO_ZYGOTE": zygote}
    with anyio.fail_after(60):
        result = await anyio.run_process(argv, env=env, check=False)
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode().endswith(
        "echo_server.py: error: argument --era: invalid choice: 'bogus' "
        "(choose from 'dual', 'legacy', 'modern')\n"
    )
