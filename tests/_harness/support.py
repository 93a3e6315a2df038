"""Test helpers: real servers on 127.0.0.1, config files, clients. No mocks."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
import pytest
import uvicorn
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp

from bench.procs import free_port
from gateway.metrics import Metrics
from toolsets import CallContext, ToolNotFoundError, ToolResult, Toolset
from toolsets._sdk_compat import create_mcp_http_client

ECHO_SERVER = str(Path(__file__).parent / "upstreams" / "echo_server.py")
MODES = ("legacy", "auto")
"""Downstream client modes: ``legacy`` speaks 2025-11-25, ``auto`` negotiates 2026-07-28."""


def echo_upstream(
    name: str = "echo", *, era: str = "dual", tools: int = 0, **extra: Any
) -> dict[str, Any]:
    """Config entry for the test echo server over stdio."""
    args = [ECHO_SERVER, "--era", era, "--name", name, "--tools", str(tools)]
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": args, **extra}


STARTUP_WAIT: Final = 60
"""Seconds a test gateway's first listing or call waits for upstreams still starting: ~1 s on
an idle machine, 12-15 s for a Python upstream at load average 15-20. The wait ends as soon as
they are up, so it costs the success path nothing."""


def write_config(directory: Path, servers: Sequence[dict[str, Any]], **sections: Any) -> Path:
    """Write a gateway config file and return its path (``startup_wait`` `STARTUP_WAIT` unless
    ``sections`` says otherwise)."""
    path = directory / "gateway.yaml"
    body = {"version": 1, "servers": list(servers), "startup_wait": STARTUP_WAIT, **sections}
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


GRACE = 15
"""Seconds a served app's graceful stop waits for open requests before cancelling them."""


class _Crashing(uvicorn.Server):
    """Stops as a killed process does: its open connections are dropped, not waited for.
    uvicorn's graceful stop waits for every open request first, and a client's long-lived
    stream (a gateway's ``subscriptions/listen`` or GET stream) never ends by itself."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for listening in self.servers:
            listening.close()  # no new connection between the drop and uvicorn's own stop
        for connection in list(self.server_state.connections):
            connection.transport.close()  # the client sees the connection end, as on a kill
        await super().shutdown(sockets)


@contextlib.asynccontextmanager
async def serve_asgi(
    app: ASGIApp,
    port: int | None = None,
    *,
    crash: bool = False,
    tls: tuple[Path, Path] | None = None,
) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1; yields the base URL. At the end it stops
    gracefully (waiting for open requests, at most `GRACE` seconds: a client's stream left open
    by a failed test must not hang the run) or, with ``crash``, drops its open connections as a
    killed server would (what restarting an upstream under a connected gateway needs). With
    ``tls`` (a certificate file and its key file) it serves https."""
    port = port or free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACE,
        ssl_certfile=None if tls is None else str(tls[0]),
        ssl_keyfile=None if tls is None else str(tls[1]),
    )
    server = _Crashing(config) if crash else uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:  # a flag: uvicorn offers nothing to wait on
                await anyio.sleep(0.01)
        try:
            yield f"{'http' if tls is None else 'https'}://127.0.0.1:{port}"
        finally:
            server.should_exit = True


class _Seen(logging.Handler):
    """Sets ``seen`` once a record's message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@contextlib.contextmanager
def logged(logger: str, text: str) -> Iterator[anyio.Event]:
    """An event set when ``logger`` logs a message containing ``text`` (at any level): what to
    wait on for something the code under test only says in its log."""
    target = logging.getLogger(logger)
    handler, level = _Seen(text), target.level
    target.addHandler(handler)
    target.setLevel(logging.DEBUG)
    try:
        yield handler.seen
    finally:
        target.removeHandler(handler)
        target.setLevel(level)


@contextlib.asynccontextmanager
async def mcp_http_client(url: str, mode: str, token: str) -> AsyncIterator[Client]:
    """An `mcp.Client` on a gateway's ``/mcp`` over streamable HTTP, holding ``token``."""
    http = create_mcp_http_client(
        headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=60)
    )
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            yield client


async def call(
    toolset: Toolset, name: str, args: Mapping[str, Any], ctx: CallContext | None = None
) -> ToolResult:
    """Call ``name`` on ``toolset`` as the gateway does: looked up once, the tool handed down."""
    ctx = ctx or CallContext()
    tool = (await toolset.get_tools(ctx)).get(name)
    if tool is None:
        raise ToolNotFoundError(name)
    return await toolset.call_tool(name, args, ctx, tool)


def path_counts(metrics: Metrics, transport: str) -> dict[str, float]:
    """How many MCP requests on ``transport`` each path (``fast``, ``sdk``) answered so far."""
    return {
        path: metrics.registry.get_sample_value(
            "lockgate_mcp_requests_total", {"transport": transport, "path": path}
        )
        or 0.0
        for path in ("fast", "sdk")
    }


@contextlib.contextmanager
def answered(metrics: Metrics, transport: str, *, fast: int, sdk: int) -> Iterator[None]:
    """Assert that the requests of the block were answered ``fast`` times by the fast path and
    ``sdk`` times by the SDK (so a test fails if the fast path is switched off)."""
    before = path_counts(metrics, transport)
    yield
    after = path_counts(metrics, transport)
    assert {k: after[k] - before[k] for k in after} == {"fast": fast, "sdk": sdk}


@contextlib.contextmanager
def mounted_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (mounting needs root, which the CI machine has)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@contextlib.contextmanager
def full(disk: Path) -> Iterator[None]:
    """Fill ``disk`` to the last byte while inside."""
    filler = disk / "filler"
    with pytest.raises(OSError, match="No space left on device"):
        _write_forever(filler)
    try:
        yield
    finally:
        os.unlink(filler)


def _write_forever(path: Path) -> None:
    with path.open("wb", buffering=0) as out:
        while True:
            out.write(b"\0" * 4096)
