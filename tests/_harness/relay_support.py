"""Helpers for the relay suite: one gateway over relay upstreams (tests/upstreams/relay_server.py)
of both eras, its two faces in both eras, and clients that answer what an upstream asks.

Imported by module name (``import relay_support``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.message import SessionMessage
from paths import HARNESS
from support import MODES, write_config

from gateway.gateway import Gateway
from gateway.mcp.server import build_server
from gateway.mcp.stdio_fast_path import StdioFastPath

RELAY_SERVER = str(HARNESS / "upstreams" / "relay_server.py")
UPSTREAM_ERAS = pytest.mark.parametrize("upstream", ["legacy", "modern"])
"""The upstream servers of the relay config named after the era they speak."""
ROOT = "file:///work/project"
SAMPLED = "model test-model said 42"


def relay_upstream(name: str, era: str, **extra: Any) -> dict[str, Any]:
    """Config entry for the relay test server over stdio."""
    args = [RELAY_SERVER, "--era", era, "--name", name]
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": args, **extra}


def relay_config(directory: Path, web: str) -> Path:
    """A gateway over a legacy-only and a modern-only relay server, one (``nosample``) whose
    sampling the config does not enable, and (``web``) a legacy-only one over HTTP at ``web``."""
    every = {"client_requests": ["elicitation", "sampling", "roots"]}
    servers = [
        relay_upstream("legacy", "legacy", **every),
        relay_upstream("modern", "modern", **every),
        relay_upstream("nosample", "dual", client_requests=["elicitation", "roots"]),
        {"name": "web", "transport": "http", "url": web, **every},
    ]
    return write_config(directory, servers, approvals={"store": "memory"})


@contextlib.asynccontextmanager
async def http_upstream(era: str) -> AsyncIterator[str]:
    """A relay server serving streamable HTTP in a subprocess; yields its MCP URL."""
    argv = [sys.executable, RELAY_SERVER, "--era", era, "--http", "0"]
    process = await anyio.open_process(argv, stderr=None)
    try:
        assert process.stdout is not None
        line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 100)
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        with anyio.CancelScope(shield=True):
            await process.wait()
        await process.aclose()


@dataclass(frozen=True)
class Served:
    """A running gateway and the URL of its HTTP face's MCP endpoint."""

    gateway: Gateway
    url: str


@dataclass(frozen=True)
class Face:
    """How a test client reaches the gateway: ``http`` or ``stdio``, and an `mcp.Client` mode
    (``legacy``: 2025-11-25; ``auto``: 2026-07-28)."""

    transport: Literal["http", "stdio"]
    mode: str


FACES = [
    pytest.param(
        Face(transport, mode), id=f"{transport}-{'legacy' if mode == 'legacy' else 'modern'}"
    )
    for transport in ("http", "stdio")
    for mode in MODES
]
LEGACY_FACES = [p for p in FACES if p.values[0].mode == "legacy"]
MODERN_FACES = [p for p in FACES if p.values[0].mode != "legacy"]


@dataclass
class Answers:
    """The user and model behind a test client: records what the gateway asked and answers it.

    ``hold`` (when set) keeps every answer back until it is set; ``asking`` is set at each
    question; ``logged`` at each log message.
    """

    name: str = "Ada"
    questions: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    roots_asked: int = 0
    logs: list[tuple[str, str | None, Any]] = field(default_factory=list)
    hold: anyio.Event | None = None
    asking: anyio.Event = field(default_factory=anyio.Event)
    logged: anyio.Event = field(default_factory=anyio.Event)

    async def _asked(self) -> None:
        self.asking.set()
        if self.hold is not None:
            await self.hold.wait()

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.questions.append(params.message)
        await self._asked()
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.prompts.extend(str(getattr(m.content, "text", "")) for m in params.messages)
        await self._asked()
        text = types.TextContent(type="text", text="42")
        return types.CreateMessageResult(role="assistant", content=text, model="test-model")

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_asked += 1
        await self._asked()
        return types.ListRootsResult(roots=[types.Root(uri=ROOT)])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.logger, params.data))
        self.logged.set()
        self.logged = anyio.Event()

    async def log_count(self, count: int) -> None:
        """Wait until ``count`` log messages arrived."""
        while len(self.logs) < count:
            await self.logged.wait()

    def callbacks(self, capable: bool) -> dict[str, Any]:
        """`mcp.Client` callbacks: declaring elicitation, sampling and roots when ``capable``."""
        answering = {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
        }
        return {"logging_callback": self.log, **(answering if capable else {})}


@contextlib.asynccontextmanager
async def stdio_face(
    gateway: Gateway,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[Any]]]:
    """``lockgate stdio`` of a running ``gateway`` in-process: the fast path and SDK server of
    one stdio connection, fed the lines an `mcp.Client` writes (a transport for `mcp.Client`);
    leaving waits until the connection is over."""
    face = StdioFastPath(build_server(gateway, transport="stdio"), gateway.metrics)
    lines_in, lines = anyio.create_memory_object_stream[bytes](100)
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](100)

    async def read() -> AsyncIterator[bytes]:
        async with lines:
            async for line in lines:
                yield line

    async def write(data: bytes) -> None:
        message = types.jsonrpc_message_adapter.validate_json(data, by_name=False)
        await to_client.send(SessionMessage(message))

    async def pump() -> None:
        async with lines_in, from_client:
            async for sent in from_client:
                line = sent.message.model_dump_json(by_alias=True, exclude_unset=True)
                await lines_in.send(line.encode() + b"\n")

    async with anyio.create_task_group() as tg, to_client:
        tg.start_soon(face.serve, read(), write)
        tg.start_soon(pump)
        yield client_reads, client_writes
        # The client closed its end: the face ends as ``lockgate stdio`` at end of input, the
        # session's teardown included.


@contextlib.asynccontextmanager
async def open_client(
    face: Face,
    gateway: Gateway,
    url: str,
    answers: Answers,
    *,
    capable: bool = True,
    log_level: types.LoggingLevel | None = None,
) -> AsyncIterator[Client]:
    """An `mcp.Client` on ``face`` of ``gateway`` (served at ``url``), answering with
    ``answers`` (declaring elicitation, sampling and roots only when ``capable``)."""
    target: Any = url if face.transport == "http" else stdio_face(gateway)
    callbacks = answers.callbacks(capable)
    client = Client(
        target, mode=face.mode, read_timeout_seconds=30, log_level=log_level, **callbacks
    )
    async with client:
        yield client


def text(result: types.CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text
