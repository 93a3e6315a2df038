"""Helpers of the PostgreSQL suite: replica configs, ``lockgate serve`` replicas, clients.

Imported by module name (``import pg_e2e_support``): pytest puts this directory on ``sys.path``.
A replica is a real ``lockgate serve`` subprocess; it is ready when it prints "serving" (read
from its stderr, which is drained for as long as it runs).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import yaml
from anyio.streams.text import TextReceiveStream
from approvals_e2e_support import AGENT_TOKEN, e2e_config, executions
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from paths import TESTS
from pg_support import pg_storage
from support import free_port

from toolsets._sdk_compat import create_mcp_http_client

HERE = TESTS / "gateway" / "postgres"
SESSION_POLICY = str(HERE / "fixtures" / "session_budget.yaml")
BUDGET_TOOL = "recorder__record_free"
"""Allowed three times per session, then denied (fixtures/session_budget.yaml)."""


def replica_config(directory: Path, schema: str, **storage: Any) -> Path:
    """The approvals suite's gateway config on PostgreSQL ``schema``, with a per-session call
    budget (the audit chain, events and webhook claims are shared in the schema)."""
    path = e2e_config(directory, log=directory / "executions.jsonl")
    body = yaml.safe_load(path.read_text(encoding="utf-8"))
    body["storage"] = pg_storage(schema, **{"connect_timeout": 2, **storage})
    body["approvals"]["request_state_key"] = "cd" * 32  # shared: any replica unseals answers
    body["policies"]["files"].append(SESSION_POLICY)
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


@dataclass
class Replica:
    """One running ``lockgate serve``."""

    name: str
    base: str
    process: anyio.abc.Process
    output: list[str] = field(default_factory=list)

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup."""
        self.process.send_signal(signal.SIGKILL)


@dataclass(frozen=True)
class Replicas:
    """Replicas ``a`` and ``b`` sharing one schema, and their upstream's execution log."""

    a: Replica
    b: Replica
    config: Path
    log: Path

    def executions(self, value: str) -> list[dict[str, Any]]:
        """Upstream executions (by either replica) of calls whose ``value`` is ``value``."""
        return executions(self.log, value)


def _command(config: Path, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gateway.cli",
        "serve",
        "-c",
        str(config),
        "--port",
        str(port),
    ]


async def _drain(replica: Replica, serving: anyio.Event) -> None:
    assert replica.process.stderr is not None
    async for chunk in TextReceiveStream(replica.process.stderr):
        replica.output.append(chunk)
        if "lockgate: serving" in "".join(replica.output[-2:]):
            serving.set()


@contextlib.asynccontextmanager
async def replica(config: Path, name: str) -> AsyncIterator[Replica]:
    """``lockgate serve`` on a free port as replica ``name``; yields it once it serves."""
    port = free_port()
    env = {**os.environ, "LOCKGATE_REPLICA": name}
    process = await anyio.open_process(
        _command(config, port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    served = Replica(name=name, base=f"http://127.0.0.1:{port}", process=process)
    serving = anyio.Event()
    async with process, anyio.create_task_group() as tg:
        tg.start_soon(_drain, served, serving)
        with anyio.fail_after(60):  # a process start: slow on a loaded machine
            await serving.wait()
        try:
            yield served
        finally:
            if process.returncode is None:
                process.terminate()
            with anyio.CancelScope(shield=True):
                await process.wait()


@contextlib.asynccontextmanager
async def session_client(url: str, mode: str, session: str | None = None) -> AsyncIterator[Client]:
    """An agent's `mcp.Client` on ``url``; ``session``: its ``Lockgate-Session`` header."""
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    if session is not None:
        headers["Lockgate-Session"] = session
    http = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30, read=60))
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client
