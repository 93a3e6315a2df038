"""Requests to a 2025-11-25 client written on a fast path's own wire, and the client's answers.

The fast paths (`gateway.mcp.http_fast_path`, `gateway.mcp.stdio_fast_path`) answer a session's
plain calls without the SDK's session. When such a call's upstream asks the client something, the
fast path asks it on the same wire, as the SDK's session would: a JSON-RPC request (id
``lockgate-relay-N``) as a line on the stdio pipe, or as an event on the call's HTTP response,
which then becomes a server-sent event stream (`EventStream`). The client's response, a line or
a POST of that session, is taken off the wire (`WireRequests.take`) before the SDK would see it.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ErrorData, LoggingLevel
from pydantic import ValidationError
from starlette.types import Send

from toolsets import jsonwire
from toolsets.upstream.peer import result_type_of

__all__ = ["EventStream", "WirePeer", "WireRequests", "is_response"]

Writer = Callable[[bytes], Awaitable[None]]
"""Writes one JSON-RPC message to the client."""
ID_PREFIX = "lockgate-relay-"


def is_response(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is a JSON-RPC response (to a request the gateway sent)."""
    return "method" not in message and ("result" in message or "error" in message)


class _Waiter:
    __slots__ = ("done", "message", "owner")

    def __init__(self, owner: str | None) -> None:
        self.owner = owner
        self.done = anyio.Event()
        self.message: Mapping[str, Any] = {}


class WireRequests:
    """The requests sent to clients on a fast path's wire that wait for their answer."""

    def __init__(self) -> None:
        self._waiting: dict[str, _Waiter] = {}
        self._ids = itertools.count(1)

    def take(self, message: Mapping[str, Any], owner: str | None = None) -> bool:
        """Hand a client's response to the request waiting for it; False when none waits for
        it from ``owner`` (the session it was sent to), so it is not one of ours."""
        waiter = self._waiting.get(str(message.get("id")))
        if waiter is None or waiter.owner != owner or not is_response(message):
            return False
        waiter.message = message
        waiter.done.set()
        return True

    async def ask(
        self, write: Writer, owner: str | None, request: types.InputRequest
    ) -> types.InputResponse:
        """Write ``request`` with ``write`` and wait for the answer from ``owner``.

        Raises:
            MCPError: the client answered with an error, or with an answer of the wrong shape.
        """
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        waiter = self._waiting[request_id] = _Waiter(owner)
        try:
            body = request.model_dump(by_alias=True, mode="json", exclude_none=True)
            await write(jsonwire.dumps({"jsonrpc": "2.0", "id": request_id, **body}))
            await waiter.done.wait()
        finally:
            del self._waiting[request_id]
        answer = waiter.message
        kind = result_type_of(request)
        try:
            if "error" in answer:
                raise MCPError.from_error_data(ErrorData.model_validate(answer["error"]))
            return kind.model_validate(answer.get("result"), by_name=False)
        except ValidationError:
            message = f"the client's answer is not a valid {kind.__name__}"
            raise MCPError(code=INVALID_PARAMS, message=message) from None


@dataclass(frozen=True, slots=True)
class WirePeer:
    """A 2025-11-25 client reached on a fast path's wire (a `ClientPeer`): asked there; its log
    messages travel on its session (``logging/setLevel``), so none go through here."""

    requests: WireRequests
    write: Writer
    owner: str | None = None

    @property
    def log_level(self) -> LoggingLevel | None:
        return None

    async def request(self, request: types.InputRequest) -> types.InputResponse:
        """Ask the client on the wire (see `WireRequests.ask`)."""
        return await self.requests.ask(self.write, self.owner, request)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Never called (``log_level`` is None)."""


class EventStream:
    """An HTTP response that becomes a server-sent event stream when first written to, as the
    SDK answers a 2025-11-25 POST that carries requests to the client before its response."""

    def __init__(self, send: Send, session_id: str) -> None:
        self._send = send
        self._session_id = session_id
        self._lock = anyio.Lock()
        self.started = False

    async def event(self, data: bytes) -> None:
        """Write one JSON-RPC message as an event (starting the stream)."""
        async with self._lock:
            await self._start()
            body = b"event: message\r\ndata: " + data + b"\r\n\r\n"
            await self._send({"type": "http.response.body", "body": body, "more_body": True})

    async def close(self, data: bytes | None) -> None:
        """End the stream, with a last message (the response) unless ``data`` is None."""
        if data is not None:
            await self.event(data)
        async with self._lock:
            await self._start()
            await self._send({"type": "http.response.body", "body": b""})

    async def _start(self) -> None:
        if not self.started:
            headers = [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"mcp-session-id", self._session_id.encode("latin-1")),
            ]
            await self._send({"type": "http.response.start", "status": 200, "headers": headers})
            self.started = True
