"""The ASGI side of the HTTP fast path: reading a request's body (bounded) and replaying it to the
SDK, noticing a disconnect, writing a JSON response, and the Accept header's verdict."""

from __future__ import annotations

import functools

import anyio
from mcp.server.streamable_http import check_accept_headers
from starlette.requests import Request
from starlette.types import Message, Receive, Send

__all__ = ["accepts", "on_disconnect", "read_body", "replay", "send_json"]


async def read_body(receive: Receive, limit: int) -> tuple[list[Message], bytes | None]:
    """The request's messages as received, and the whole body (None when it is too big)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > limit:
            return messages, None
        if not message.get("more_body", False):
            break
    if len(messages) == 1:
        return messages, messages[0].get("body", b"")
    return messages, b"".join(m.get("body", b"") for m in messages)


async def on_disconnect(receive: Receive, cancel: anyio.CancelScope) -> None:
    """Cancel ``cancel`` when the client goes away."""
    while (await receive())["type"] != "http.disconnect":
        pass
    cancel.cancel()


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A ``receive`` that yields ``messages`` again, then the real stream."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def send_json(send: Send, status: int, body: bytes, session_id: str | None) -> None:
    """A whole JSON response (with the session id header when ``session_id`` is given)."""
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@functools.lru_cache(maxsize=64)
def accepts(accept: str) -> tuple[bool, bool]:
    """The SDK's ``(has_json, has_sse)`` verdict on an Accept header, once per distinct value
    (clients send the same one on every request)."""
    request = Request({"type": "http", "headers": [(b"accept", accept.encode("latin-1"))]})
    return check_accept_headers(request)
