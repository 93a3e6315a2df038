"""The stdio face: the same gateway as an MCP server on stdin/stdout (both eras)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator, Iterator

from mcp.server.stdio import stdio_server

from gateway.auth.tokens import Authenticator
from gateway.gateway import Gateway
from gateway.mcp.server import build_server
from gateway.mcp.stdio_fast_path import LineWriter, StdioFastPath
from toolsets.context import ANONYMOUS, Principal
from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["TOKEN_ENV", "serve_stdio", "stdio_principal"]

TOKEN_ENV = "LOCKGATE_TOKEN"
MAX_LINE = 1 << 28
"""The longest message line read (256 MiB); MCP sets no limit, the SDK's transport neither."""


async def stdio_principal(gateway: Gateway) -> Principal:
    """The agent on the other end of stdin: from ``$LOCKGATE_TOKEN`` (a static agent token or
    an agent's JWT) when agents are configured."""
    authenticator = Authenticator(gateway.config.auth)
    if not authenticator.required("agent"):
        return ANONYMOUS
    identity = await authenticator.identify(os.environ.get(TOKEN_ENV))
    found = identity.holding("agent")
    if found is None:
        why = f" ({identity.problem})" if identity.problem else ""
        message = f"agents are configured: set ${TOKEN_ENV} to an agent token{why}"
        raise ConfigError([ConfigIssue("", None, None, "auth.agents", message)])
    return found.principal


async def serve_stdio(gateway: Gateway) -> None:
    """Serve ``gateway`` (already entered) on this process's stdin/stdout until EOF."""
    server = build_server(gateway, transport="stdio", principal=await stdio_principal(gateway))
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

    Raises:
        ValueError: stdin or stdout is not a pipe, a socket or a terminal.
    """
    for fd in (0, 1):
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)):
            raise ValueError(f"fd {fd} is not a pipe, a socket or a terminal")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(0), "rb", buffering=0)
    )
    try:
        transport, protocol = await loop.connect_write_pipe(
            lambda: _WritePipe(loop), os.fdopen(os.dup(1), "wb", 0)
        )
    except BaseException:
        read_transport.close()
        raise
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client is gone
            writer.write(data + b"\n")
            await writer.drain()

    try:
        with _diverted():
            yield _lines(reader), write
    finally:
        read_transport.close()
        writer.close()  # flushes what is buffered, then closes the pipe
        await protocol.closed
        for fd in (0, 1):  # the pipes' open file descriptions are shared with fds 0 and 1
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)


class _WritePipe(asyncio.streams.FlowControlMixin):
    """Flow control for the stdout pipe, and a future that is done once the pipe is closed
    (``StreamWriter.wait_closed`` needs more of a protocol than a write pipe has)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.closed: asyncio.Future[None] = loop.create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while line := await reader.readline():
        yield line


@contextlib.contextmanager
def _diverted() -> Iterator[None]:
    """While serving, fd 0 reads the null device and fd 1 writes to stderr, so stray reads and
    prints (of the gateway or anything it runs) never touch the wire; both are restored after."""
    saved = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    try:
        yield
    finally:
        for fd, copy in zip((0, 1), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
