"""The stdio face: the same gateway as an MCP server on stdin/stdout (both eras)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

from mcp.server.stdio import stdio_server

from gateway.auth import Authenticator
from gateway.downstream import build_server
from gateway.gateway import Gateway
from gateway.stdio_fast_path import LineWriter, StdioFastPath
from toolsets.context import ANONYMOUS, Principal
from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["TOKEN_ENV", "serve_stdio", "stdio_principal"]

TOKEN_ENV = "LOCKGATE_TOKEN"
MAX_LINE = 1 << 28
"""The longest message line read (256 MiB); MCP sets no limit, the SDK's transport neither."""


def stdio_principal(gateway: Gateway) -> Principal:
    """The agent on the other end of stdin: from ``$LOCKGATE_TOKEN`` when agents are configured."""
    authenticator = Authenticator(gateway.config.auth)
    if not authenticator.required("agent"):
        return ANONYMOUS
    principal = authenticator.authenticate(os.environ.get(TOKEN_ENV), "agent")
    if principal is None:
        message = f"agents are configured: set ${TOKEN_ENV} to an agent token"
        raise ConfigError([ConfigIssue("", None, None, "auth.agents", message)])
    return principal


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` (already entered) on this process's stdin/stdout until EOF."""
    server = build_server(gateway, transport="stdio", principal=stdio_principal(gateway))
    async with contextlib.AsyncExitStack() as stack:
        try:
            lines, write = await stack.enter_async_context(_pipes())
        except ValueError:  # stdin or stdout is a regular file: the SDK's threaded transport
            read, write_stream = await stack.enter_async_context(stdio_server())
            await server.run(read, write_stream, server.create_initialization_options())
        else:
            await StdioFastPath(server, gateway.metrics).serve(lines, write)
    gateway.closing()


@contextlib.asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[AsyncIterator[bytes], LineWriter]]:
    """The wire (fds 0 and 1) as non-blocking pipes, read and written on the event loop.

    While serving, fd 0 reads the null device and fd 1 writes to stderr, so stray reads and
    prints (of the gateway or anything it runs) never touch the wire; both are restored after.

    Raises:
        ValueError: stdin or stdout is not a pipe, socket or character device.
    """
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.fdopen(os.dup(0), "rb", buffering=0), os.fdopen(os.dup(1), "wb", 0)
    reader = asyncio.StreamReader(limit=MAX_LINE)
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), wire_in
        )
    except ValueError:
        wire_in.close()
        wire_out.close()
        raise
    try:
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop), wire_out
        )
    except ValueError:
        read_transport.close()
        wire_out.close()
        raise
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    saved = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)

    async def lines() -> AsyncIterator[bytes]:
        while line := await reader.readline():
            yield line

    async def write(data: bytes) -> None:
        writer.write(data + b"\n")
        await writer.drain()

    try:
        yield lines(), write
    finally:
        read_transport.close()
        transport.close()
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        os.close(saved[0])
        os.close(saved[1])
