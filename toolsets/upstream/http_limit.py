"""`ResponseLimit`: an httpx2 transport bounding what an upstream HTTP response may hand us.

The MCP SDK reads a JSON response whole and buffers each server-sent event whole, so a 50 MiB
result costs the gateway 50 MiB before anything can refuse it. This transport wraps every
response body so that no more than about ``limit`` bytes of one message are ever held:

- ``application/json``: at most ``limit`` bytes are read. A longer body is not read further,
  the upstream response is closed, and the SDK reads instead a JSON-RPC error for the id of the
  request it posted, with ``data`` ``{TOO_LARGE: size}``: an error result naming the limit.
- ``text/event-stream``: events pass through whole, one at a time; an event over ``limit`` is
  dropped and a ``message`` event with that error stands in for it. On a request's own stream
  (a streamable-HTTP POST) the error answers the request at once and the stream is closed
  (a request or notification over the limit is only dropped); on a stream shared by many
  requests (the GET stream, the legacy SSE stream) the id is read from the start or the end of
  the event, and an event whose id cannot be read is dropped. Each is logged once, by size.
- anything else is cut at ``limit`` bytes.

Requests ask for ``Accept-Encoding: identity``, so the bytes counted are the bytes held.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final

import httpx2
import mcp_types as types

from toolsets import jsonwire
from toolsets.upstream.lines import HEAD
from toolsets.upstream.stdio_pipe import TOO_LARGE

__all__ = ["ResponseLimit"]

log = logging.getLogger("lockgate.upstream")
RequestId = str | int

TAIL: Final = 512
"""Bytes kept of the end of an oversized event: enough for ``"id": ...}``."""
_END: Final = re.compile(rb"\r?\n\r?\n")  # a blank line ends an event
_DATA: Final = re.compile(rb"^data: ?", re.MULTILINE)
_ID: Final = rb'("(?:[^"\\]|\\.)*"|-?\d+)'
_OPEN: Final = rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'  # `{` and maybe the version
_ID_KEY: Final = rb'"id"\s*:\s*' + _ID + rb'\s*,\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
# Anchored at the message's first keys or its last, so a nested or quoted "id" never matches.
_RESPONSE_ID: Final = re.compile(_OPEN + _ID_KEY + rb'"(?:result|error)"\s*:')
_RESPONSE: Final = re.compile(_OPEN + rb'"(?:result|error)"\s*:')
_LAST_ID: Final = re.compile(
    rb'[{,]\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z'
)
_REQUEST: Final = re.compile(_OPEN + rb"(?:" + _ID_KEY + rb')?"method"\s*:')


class ResponseLimit(httpx2.AsyncBaseTransport):
    """Wraps ``wrapped`` so that one response hands over at most ``limit`` bytes of a message
    (see the module docstring).

    Args:
        wrapped: The transport that sends the requests.
        limit: The largest message, in bytes.
        server: The upstream's name, for the log and the error message.
        setting: What sets the limit, as the error message names it.
    """

    def __init__(
        self,
        wrapped: httpx2.AsyncBaseTransport,
        *,
        limit: int,
        server: str,
        setting: str = "max_result_bytes",
    ) -> None:
        self.wrapped = wrapped
        self.limit = limit
        self.server = server
        self.setting = setting

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self.wrapped.handle_async_request(request)
        body = response.stream
        assert isinstance(body, httpx2.AsyncByteStream)  # an async transport's
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        bounded: httpx2.AsyncByteStream
        if content_type == "application/json":
            declared = response.headers.get("content-length", "")
            size = int(declared) if declared.isdigit() else None
            bounded = _JSONBody(body, self, request, size)
        elif content_type == "text/event-stream":
            bounded = _EventStream(body, self, request)
        else:
            bounded = _CutBody(body, self)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() != b"content-length"]
        return httpx2.Response(
            response.status_code, headers=headers, stream=bounded, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.wrapped.aclose()

    def error(self, request_id: RequestId, size: int, *, exact: bool) -> bytes:
        """The JSON-RPC error standing in for a response of ``size`` bytes (or more)."""
        amount = f"{size}" if exact else f"at least {size}"
        error = {
            "code": types.INTERNAL_ERROR,
            "message": (
                f"the server's response is {amount} bytes, over the gateway's limit of "
                f"{self.limit} bytes ({self.setting}); not relayed"
            ),
            "data": {TOO_LARGE: size},
        }
        return jsonwire.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})

    def warn(self, size: int, what: str = "not relayed") -> None:
        """Log a message over the limit (its size, never its content)."""
        log.warning(
            "upstream %s sent a message of %d bytes or more, over the limit of %d (%s); %s",
            self.server,
            size,
            self.limit,
            self.setting,
            what,
        )


def _request_id(request: httpx2.Request) -> RequestId | None:
    """The id of the JSON-RPC request ``request`` posted, if it posted one."""
    if request.method != "POST":
        return None
    try:
        message = jsonwire.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    request_id = message.get("id") if isinstance(message, dict) and "method" in message else None
    return request_id if isinstance(request_id, str | int) else None


class _JSONBody(httpx2.AsyncByteStream):
    """A JSON body, held until complete; over the limit, an error for the request instead."""

    def __init__(
        self,
        wrapped: httpx2.AsyncByteStream,
        cap: ResponseLimit,
        request: httpx2.Request,
        declared: int | None,
    ) -> None:
        self.wrapped, self.cap, self.request, self.declared = wrapped, cap, request, declared

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = self.declared
        if size is None or size <= self.cap.limit:
            parts, size = await self._read()
            if parts is not None:
                for part in parts:
                    yield part
                return
        await self.wrapped.aclose()  # read no further
        self.cap.warn(size)
        request_id = _request_id(self.request)
        if request_id is not None:  # else the SDK answers its request with a parse error
            yield self.cap.error(request_id, size, exact=self.declared is not None)

    async def _read(self) -> tuple[list[bytes] | None, int]:
        """The body's chunks and size; None and the size read so far once over the limit."""
        parts: list[bytes] = []
        size = 0
        async for chunk in self.wrapped:
            size += len(chunk)
            if size > self.cap.limit:
                return None, size
            parts.append(chunk)
        return parts, size

    async def aclose(self) -> None:
        await self.wrapped.aclose()


class _CutBody(httpx2.AsyncByteStream):
    """Any other body, passed through and cut at the limit."""

    def __init__(self, wrapped: httpx2.AsyncByteStream, cap: ResponseLimit) -> None:
        self.wrapped, self.cap = wrapped, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self.wrapped:
            size += len(chunk)
            if size > self.cap.limit:
                yield chunk[: len(chunk) - (size - self.cap.limit)]
                self.cap.warn(size, "cut there")
                await self.wrapped.aclose()
                return
            yield chunk

    async def aclose(self) -> None:
        await self.wrapped.aclose()


@dataclass(frozen=True, slots=True)
class _Over:
    """The current event just went over the limit: its first bytes, its size so far."""

    head: bytes
    size: int


@dataclass(frozen=True, slots=True)
class _Dropped:
    """An event over the limit ended: its first and last bytes, its size."""

    head: bytes
    tail: bytes
    size: int


class _BoundedEvents:
    """Splits an event stream into events of at most ``limit`` bytes; of a longer event only
    the first `HEAD` and last `TAIL` bytes are kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()  # the current event (its last bytes, once over the limit)
        self._scanned = 0  # bytes of the buffer already searched for an event's end
        self._head: bytes | None = None  # set while discarding an event over the limit
        self._discarded = 0  # bytes of that event no longer in the buffer

    def feed(self, chunk: bytes) -> list[bytes | _Over | _Dropped]:
        """What ``chunk`` completes or pushes over the limit, in order."""
        buffer = self._buffer
        buffer += chunk
        out: list[bytes | _Over | _Dropped] = []
        start = 0
        for end in _END.finditer(buffer, max(self._scanned - 3, 0)):
            size = end.end() - start
            if self._head is None and size > self.limit:
                self._head = bytes(buffer[start : start + HEAD])
                out.append(_Over(self._head, size))
            if self._head is None:
                out.append(bytes(buffer[start : end.end()]))
            else:
                tail = bytes(buffer[max(start, end.start() - TAIL) : end.start()])
                out.append(_Dropped(self._head, tail, self._discarded + size))
                self._head, self._discarded = None, 0
            start = end.end()
        del buffer[:start]
        if self._head is None and len(buffer) > self.limit:
            self._head = bytes(buffer[:HEAD])
            out.append(_Over(self._head, len(buffer)))
        if self._head is not None and len(buffer) > TAIL:
            self._discarded += len(buffer) - TAIL
            del buffer[:-TAIL]
        self._scanned = len(buffer)
        return out


class _EventStream(httpx2.AsyncByteStream):
    """An event stream whose events over the limit are replaced (see the module docstring)."""

    def __init__(
        self, wrapped: httpx2.AsyncByteStream, cap: ResponseLimit, request: httpx2.Request
    ) -> None:
        self.wrapped, self.cap, self.request = wrapped, cap, request
        self.own = request.method == "POST"  # a request's own stream, else a shared one

    async def __aiter__(self) -> AsyncIterator[bytes]:
        events = _BoundedEvents(self.cap.limit)
        async for chunk in self.wrapped:
            for piece in events.feed(chunk):
                if isinstance(piece, bytes):
                    yield piece
                elif isinstance(piece, _Over):
                    request_id = self._answers(piece.head)
                    if request_id is not None:  # read no further
                        self.cap.warn(piece.size)
                        yield self._event(piece.head, request_id, piece.size, exact=False)
                        await self.wrapped.aclose()
                        return
                else:
                    request_id = _response_id(piece)
                    if request_id is None:
                        self.cap.warn(piece.size, "dropped (not a response with an id)")
                        continue
                    self.cap.warn(piece.size)
                    yield self._event(piece.head, request_id, piece.size, exact=True)

    def _answers(self, head: bytes) -> RequestId | None:
        """The id of this stream's request, if an event starting with ``head`` answers it
        (on a request's own stream, anything but a request or notification does)."""
        if not self.own or _REQUEST.match(_data(head)):
            return None
        return _request_id(self.request)

    def _event(self, head: bytes, request_id: RequestId, size: int, *, exact: bool) -> bytes:
        """A ``message`` event with the error, keeping the dropped event's id for resumption."""
        event_id = re.search(rb"^id:[^\r\n]*\r?\n", head, re.MULTILINE)
        kept = event_id.group(0) if event_id is not None else b""
        data = self.cap.error(request_id, size, exact=exact)
        return b"event: message\n" + kept + b"data: " + data + b"\n\n"

    async def aclose(self) -> None:
        await self.wrapped.aclose()


def _data(head: bytes) -> bytes:
    """The start of an event's data (empty if its first bytes hold no ``data:`` line)."""
    match = _DATA.search(head)
    return head[match.end() :] if match is not None else b""


def _last_data(tail: bytes) -> bytes:
    """The end of an event's last data line (the whole tail if it holds no line break)."""
    lines = tail.split(b"\n")
    while len(lines) > 1 and not lines[-1].startswith(b"data:"):
        lines.pop()  # a field after the data (id, retry) or a comment
    return _DATA.sub(b"", lines[-1].rstrip(b"\r"), count=1)


def _response_id(event: _Dropped) -> RequestId | None:
    """The id of the JSON-RPC response ``event`` carried, when its first or last bytes tell
    (``{"jsonrpc": "2.0", "id": ..., "result"`` or ``{"result": ... "id": ...}``)."""
    head = _data(event.head)
    match = _RESPONSE_ID.match(head)
    if match is None and _RESPONSE.match(head):
        match = _LAST_ID.search(_last_data(event.tail))
    if match is None:
        return None
    value = jsonwire.loads(match.group(1))
    return value if isinstance(value, str | int) else None
