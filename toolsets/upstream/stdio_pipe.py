"""`StdioPipe`: a stdio upstream's pipes, shared by its SDK session and direct requests.

The SDK client session (handshake or discovery, listings, notifications, progress, everything
that needs its machinery) reads and writes through `transport()` exactly as through the SDK's
own ``stdio_client``. `request()` sends a JSON-RPC request straight down the same pipe and takes
its response off the wire before the session ever parses it: no dispatcher, memory streams or
pydantic models on the way, which is most of what a plain call costs a gateway.

Direct requests use string ids (``lockgate-N``) the session never issues, and copy the protocol
envelope (2026-07-28 ``params._meta``) from the session's own requests, so the server sees the
same client either way. Process start and stop (own process group, close stdin, then terminate
the tree) are the SDK's; a server that has not written a byte yet (still starting) is
terminated at once instead of waited for: it holds no state, and a Python server that is
still importing reads its end of input only after its whole start-up.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TextIO, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.os.win32.utilities import ServerProcess
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from toolsets import jsonwire
from toolsets._sdk_compat import (
    TransportStreams,
    create_platform_compatible_process,  # the SDK's spawn: own process group / job object
    get_executable_command,
    stop_server_process,  # the SDK's shutdown: close stdin, wait, terminate the tree
    terminate_process_tree,
)
from toolsets.upstream.lines import BoundedLines, Oversized, request_id_of
from toolsets.upstream.stderr_log import StderrLog

__all__ = ["DEFAULT_MAX_MESSAGE", "TOO_LARGE", "StdioPipe"]

_ToSession = MemoryObjectSendStream[SessionMessage | Exception]
_FromSession = MemoryObjectReceiveStream[SessionMessage]

log = logging.getLogger("lockgate.upstream")
_ENVELOPE_KEYS = (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY)
DEFAULT_MAX_MESSAGE = 16 << 20
"""The largest message read from a server (16 MiB); a larger response is an error."""
TOO_LARGE = "lockgate/too_large"
"""``data`` key of the error standing in for a response over the limit: its size."""
_ID_PREFIX = "lockgate-"
_ID_MARK = b'"lockgate-'


class _Batch:
    """Lines queued for one write down the pipe; ``settled`` is set when they were written, failed,
    or their writer left without writing them (a waiting sender then takes over)."""

    __slots__ = ("error", "parts", "settled", "written")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.settled = anyio.Event()
        self.written = False
        self.error: BaseException | None = None


class _Waiter:
    """One direct request waiting for its response line."""

    __slots__ = ("done", "message")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.message: dict[str, Any] | None = None


class StdioPipe:
    """The pipes of one stdio server process (see the module docstring)."""

    def __init__(
        self,
        params: StdioServerParameters,
        *,
        name: str = "stdio",
        max_message: int = DEFAULT_MAX_MESSAGE,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self.params = params
        self.name = name
        self.max_message = max_message
        self._on_exit = on_exit
        self._process: ServerProcess | None = None
        self._heard = False  # the process has written to stdout
        self._batch = _Batch()  # the lines the next write takes
        self._writing = False  # a sender is writing batches (it takes the queued ones too)
        self.writes = 0
        """How many writes went down the pipe (for tests and metrics)."""
        self._waiters: dict[str, _Waiter] = {}
        self._abandoned: collections.deque[str] = collections.deque(maxlen=256)
        self._ids = itertools.count(1)
        self.envelope: dict[str, Any] | None = None
        """The 2026-07-28 envelope of the session's requests; None on handshake sessions."""
        self.direct_requests = 0
        """How many requests went down the pipe directly (for tests and metrics)."""

    @property
    def open(self) -> bool:
        """True while the process is running and its pipes are connected."""
        return self._process is not None

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send one request straight down the pipe; its ``result``.

        Raises:
            MCPError: the server answered with an error.
            ConnectionError: the pipe is closed or closed while waiting.
        """
        if self._process is None:
            raise ConnectionError("the server process is not running")
        request_id = f"{_ID_PREFIX}{next(self._ids)}"
        body = dict(params)
        if self.envelope is not None:
            body["_meta"] = {**self.envelope, **(body.get("_meta") or {})}
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
        waiter = self._waiters[request_id] = _Waiter()
        try:
            await self._send(jsonwire.dumps(line))
            self.direct_requests += 1
            await waiter.done.wait()
        except BaseException:
            if request_id in self._waiters:
                self._abandoned.append(request_id)
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await self._cancel(request_id)
            raise
        finally:
            self._waiters.pop(request_id, None)
        message = waiter.message
        if message is None:
            raise ConnectionError("the server process closed its pipes")
        error = message.get("error")
        if isinstance(error, dict):
            raise MCPError(
                code=int(error.get("code", types.INTERNAL_ERROR)),
                message=str(error.get("message", "")),
                data=error.get("data"),
            )
        result = message.get("result")
        if not isinstance(result, dict):
            raise MCPError(
                code=types.INTERNAL_ERROR, message="the server sent a malformed response"
            )
        return result

    async def _cancel(self, request_id: str) -> None:
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the gateway's caller cancelled"},
        }
        with contextlib.suppress(Exception):
            await self._send(jsonwire.dumps(notice))

    async def _write(self, text: str) -> None:
        await self._send(text.encode(self.params.encoding, self.params.encoding_error_handler))

    async def _send(self, line: bytes) -> None:
        """One line down the pipe (``line`` is UTF-8 JSON without its newline), in order.

        Lines sent while another sender writes are coalesced: that sender writes everything
        queued in one ``write`` per loop turn, and each sender returns once its line is written
        (back-pressure: a full pipe holds them all). With other direct requests in flight the
        first sender waits one loop turn so that the others of that turn join its write; a lone
        request is written at once.
        """
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionError("the server process is not running")
        batch = self._batch
        batch.parts.append(line + b"\n")
        while self._writing:
            await batch.settled.wait()
            if batch.error is not None:
                raise ConnectionError(f"writing to the server failed: {batch.error!r}")
            if batch.written:
                return
        await self._write_batches(process.stdin, wait=len(self._waiters) > 1)

    async def _write_batches(self, stdin: ByteSendStream, *, wait: bool) -> None:
        """Write queued batches until none is left (this sender's line is in the first)."""
        self._writing = True
        try:
            if wait:  # the other senders of this loop turn join the batch
                await anyio.lowlevel.cancel_shielded_checkpoint()
            alone = True  # the first batch may hold only this sender's own line
            while self._batch.parts:
                batch, self._batch = self._batch, _Batch()
                alone, carrying = False, not (alone and len(batch.parts) == 1)
                try:
                    # Shielded when it carries other senders' lines: they must not be lost.
                    with anyio.CancelScope(shield=carrying):
                        await stdin.send(b"".join(batch.parts))
                    self.writes += 1
                    batch.written = True
                except BaseException as exc:
                    batch.error = exc
                    raise
                finally:
                    batch.settled.set()
        finally:
            self._writing = False
            waiting = self._batch
            if waiting.parts:  # left (cancelled or failed) with lines queued: a sender takes over
                settled, waiting.settled = waiting.settled, anyio.Event()
                settled.set()

    def _too_large(self, line: Oversized) -> bytes:
        """The error response standing in for a message over the limit (b"" if it names no
        request: a notification or request from the server is dropped)."""
        request_id = request_id_of(line.head)
        log.warning(
            "upstream %s sent %d bytes in one message, over the limit of %d; not relayed",
            self.name,
            line.size,
            self.max_message,
        )
        if request_id is None:
            return b""
        error = {
            "code": types.INTERNAL_ERROR,
            "message": (
                f"the server's response is {line.size} bytes, over the gateway's limit of "
                f"{self.max_message} bytes (max_result_bytes); not relayed"
            ),
            "data": {TOO_LARGE: line.size},
        }
        return jsonwire.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})

    def _take(self, line: bytes) -> bool:
        """Hand ``line`` to its direct request, if it answers one (or an abandoned one)."""
        if _ID_MARK not in line:
            return False
        try:
            message = jsonwire.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or "method" in message:
            return False
        request_id = message.get("id")
        waiter = self._waiters.get(request_id) if isinstance(request_id, str) else None
        if waiter is not None:
            waiter.message = message
            waiter.done.set()
            return True
        return request_id in self._abandoned

    def _learn(self, message: SessionMessage) -> None:
        """Keep the envelope the session puts on its requests (2026-07-28 sessions)."""
        root = message.message
        if isinstance(root, types.JSONRPCRequest) and root.method == "initialize":
            self.envelope = None  # the discovery probe failed: a handshake session it is
        elif isinstance(root, types.JSONRPCRequest) and isinstance(root.params, dict):
            meta = root.params.get("_meta")
            if isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta:
                self.envelope = {k: meta[k] for k in _ENVELOPE_KEYS if k in meta}

    @contextlib.asynccontextmanager
    async def transport(self) -> AsyncIterator[TransportStreams]:
        """Start the process; the streams an `mcp.Client` session talks through."""
        params = self.params
        process = await create_platform_compatible_process(
            command=await get_executable_command(params.command),
            args=params.args,
            env=get_default_environment() | (params.env or {}),
            cwd=params.cwd,
            errlog=cast(TextIO, subprocess.PIPE),  # read by `StderrLog`, bounded
        )
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self.envelope = None
        self._process, self._heard = process, False
        try:
            async with anyio.create_task_group() as tg:
                stderr = getattr(process, "stderr", None)  # a pipe, except on Windows
                if stderr is not None:
                    tg.start_soon(StderrLog(self.name).drain, stderr)
                tg.start_soon(self._read, process, to_session)
                tg.start_soon(self._pump, from_session, to_session)
                try:
                    yield session_reads, session_writes
                finally:
                    with anyio.CancelScope(shield=True):
                        self._closed()
                        session_writes.close()
                        session_reads.close()
                        if not self._heard:  # still starting: nothing to wind down
                            await terminate_process_tree(process)
                        await stop_server_process(process)
                    tg.cancel_scope.cancel()
        finally:
            self._closed()

    async def _read(self, process: ServerProcess, to_session: _ToSession) -> None:
        """Lines from the server: direct responses to their waiters, the rest to the session."""
        assert process.stdout is not None
        lines = BoundedLines(self.max_message)
        session_gone = False  # keep draining: a server blocked on a full pipe cannot exit
        try:
            async with to_session:
                async for chunk in process.stdout:
                    self._heard = True
                    for piece in lines.feed(chunk):
                        line = self._too_large(piece) if isinstance(piece, Oversized) else piece
                        if session_gone or not line.strip() or self._take(line):
                            continue
                        try:
                            await to_session.send(_parse(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            session_gone = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            pass
        finally:
            self._closed()
            if self._on_exit is not None:  # the server's output ended: it exited, maybe idle
                self._on_exit()

    async def _pump(self, from_session: _FromSession, to_session: _ToSession) -> None:
        """The session's messages down the pipe."""
        try:
            async with from_session:
                async for message in from_session:
                    self._learn(message)
                    await self._write(
                        message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            await to_session.aclose()

    def _closed(self) -> None:
        """The pipes are gone: every waiting direct request ends with a connection error."""
        self._process = None
        for waiter in self._waiters.values():
            waiter.done.set()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("upstream sent a line that is not JSON-RPC: %s", exc)
        return exc
