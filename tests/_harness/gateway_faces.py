"""Helpers for the gateway suite: the two downstream faces (HTTP, stdio) in both MCP eras.

Imported by module name (``import gateway_faces``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from support import ECHO_SERVER, MODES, free_port, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
ECHO_TOOLS = frozenset(
    {
        "echo",
        "whoami",
        "fail",
        "slow",
        "wait_cancelled",
        "add_tool",
        "big",
        "weather",
        "flood_list_changed",
        "lists_served",
        "rug_pull",
        "write_note",
        "add_prompt",
    }
)
DOWNSTREAM_AUTHORIZATION = "Bearer downstream-client-secret"
"""Sent by every HTTP test client; no upstream may ever see it."""
CLI = (sys.executable, "-m", "gateway.cli")


@dataclass(frozen=True)
class Face:
    """How a test client reaches the gateway: a transport and an `mcp.Client` mode."""

    transport: Literal["http", "stdio"]
    mode: str

    @property
    def protocol(self) -> str:
        """The protocol version this client must end up speaking."""
        return LEGACY if self.mode == "legacy" else MODERN


FACES = [
    pytest.param(
        Face(transport, mode), id=f"{transport}-{'legacy' if mode == 'legacy' else 'modern'}"
    )
    for transport in ("http", "stdio")
    for mode in MODES
]
HTTP_FACES = [p for p in FACES if p.values[0].transport == "http"]
CROSSED_FACES = [p for p in FACES if p.id in ("http-legacy", "stdio-modern")]
"""Each era on one face and each face in one era: for a slow peer whose behaviour under test does
not depend on the face-era product (a full `FACES` matrix over a fast peer covers that)."""


@contextlib.asynccontextmanager
async def serve_gateway(config: Path) -> AsyncIterator[str]:
    """``lockgate serve`` in-process: the gateway's HTTP app under uvicorn; yields the /mcp URL."""
    async with serve_asgi(build_app(Gateway.from_config(config))) as base:
        yield f"{base}/mcp"


@contextlib.asynccontextmanager
async def open_client(
    face: Face,
    *,
    config: Path,
    url: str | None = None,
    message_handler: Any = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """An `mcp.Client` on ``face``: HTTP against ``url`` (with extra ``headers``), or stdio
    against ``lockgate stdio``."""
    async with contextlib.AsyncExitStack() as stack:
        if face.transport == "http":
            assert url is not None, "an HTTP face needs the gateway URL"
            http = httpx2.AsyncClient(
                headers={"Authorization": DOWNSTREAM_AUTHORIZATION, **(headers or {})},
                timeout=httpx2.Timeout(30, read=300),
            )
            await stack.enter_async_context(http)
            target: Any = streamable_http_client(url, http_client=http)
        else:
            target = StdioServerParameters(
                command=sys.executable, args=[*CLI[1:], "stdio", "--config", str(config)]
            )
        client = Client(
            target, mode=face.mode, message_handler=message_handler, read_timeout_seconds=30
        )
        await stack.enter_async_context(client)
        assert client.protocol_version == face.protocol
        yield client


@contextlib.asynccontextmanager
async def open_face(
    face: Face, config: Path, *, message_handler: Any = None
) -> AsyncIterator[Client]:
    """A client on ``face`` of a gateway of its own started from ``config``."""
    async with contextlib.AsyncExitStack() as stack:
        url = None
        if face.transport == "http":
            url = await stack.enter_async_context(serve_gateway(config))
        yield await stack.enter_async_context(
            open_client(face, config=config, url=url, message_handler=message_handler)
        )


def text_of(result: Any) -> str:
    """The text of a tool result's first content block."""
    return str(result.content[0].text)


def lockgate(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``lockgate`` CLI as a subprocess; never raises on a non-zero exit."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def echo_over(
    transport: Literal["http", "sse"], *, era: str = "dual", name: str = "echo"
) -> tuple[list[str], int, str]:
    """An echo server command serving ``transport`` on a free port: ``(argv, port, url)``."""
    port = free_port()
    path = "/mcp" if transport == "http" else "/sse"
    args = [sys.executable, ECHO_SERVER, "--era", era, "--name", name, f"--{transport}", str(port)]
    return args, port, f"http://127.0.0.1:{port}{path}"


@contextlib.asynccontextmanager
async def running(
    commands: Sequence[tuple[list[str], int]], *, crash: bool = False
) -> AsyncIterator[None]:
    """Run server subprocesses; returns once every one accepts TCP connections on its port.
    At the end they are terminated, or (``crash``) killed."""
    async with contextlib.AsyncExitStack() as stack:
        for argv, _port in commands:
            process = await anyio.open_process(argv, stdout=subprocess.DEVNULL, stderr=None)
            stack.push_async_callback(_stop, process, crash)
        for _argv, port in commands:
            await _wait_for_port(port)
        yield


async def _stop(process: anyio.abc.Process, crash: bool = False) -> None:
    if process.returncode is None:
        process.kill() if crash else process.terminate()
    with anyio.CancelScope(shield=True):
        await process.wait()
    await process.aclose()


async def _wait_for_port(port: int) -> None:
    # Polling is the only readiness signal an external process gives us.
    with anyio.fail_after(60):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.02)
            else:
                await stream.aclose()
                return
