"""``GET /api/events``: the bus as a Server-Sent Events stream, with ``Last-Event-ID`` replay.

Each event is sent as ``id:``/``event:``/``data:`` lines whose data is the CloudEvent JSON.
Control events (``lockgate.gap``, ``lockgate.reset``) carry no ``id:``, so a client's last id
always names a real event. The stream ends when the client disconnects or the bus closes.
"""

from __future__ import annotations

import hmac
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from gateway.events.bus import EventBus, Subscription
from gateway.events.model import CONTROL_TYPES, Event
from gateway.events.tool_events import reset

__all__ = ["Authorize", "bearer_authorizer", "events_endpoint", "sse_frame"]

Visible = Callable[[Event], Awaitable[bool]]
"""Whether one event may go on a stream (see `gateway.api.event_scopes`)."""
Authorize = Callable[[Request], Awaitable[bool | Visible] | bool | Visible]
"""Decides whether a request may read the event stream: False refuses, True allows every
event, a `Visible` allows the events it accepts."""

_PATTERN = re.compile(r"[A-Za-z0-9._*?\[\]-]{1,100}")
_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_frame(event: Event) -> bytes:
    """One SSE message for ``event`` (no ``id:`` line for control events)."""
    head = b"" if event.type in CONTROL_TYPES else b"id: " + event.id.encode() + b"\n"
    return head + b"event: " + event.type.encode() + b"\ndata: " + event.json_bytes + b"\n\n"


def bearer_authorizer(tokens: Iterable[str]) -> Callable[[Request], bool]:
    """An `Authorize` accepting ``Authorization: Bearer <token>`` for any of ``tokens``."""
    accepted = [t.encode() for t in tokens if t]

    def authorize(request: Request) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode()
        # Compare against every token, so timing tells nothing about which one nearly matched.
        hits = [hmac.compare_digest(given, t) for t in accepted]
        return scheme.lower() == "bearer" and any(hits)

    return authorize


def events_endpoint(
    bus: EventBus,
    authorize: Authorize,
    *,
    keepalive: float = 15.0,
    retry_ms: int = 3000,
    buffer: int | None = None,
    refused: Callable[[Request], Response] | None = None,
) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint streaming ``bus`` events as ``text/event-stream``.

    Query ``types`` takes comma-separated patterns (``tool.*,upstream.*``; default ``*``).

    Args:
        bus: The event bus.
        authorize: Whether the request may subscribe; otherwise ``401``.
        keepalive: Seconds between keep-alive comments.
        retry_ms: Reconnection delay advised to clients; sent first, once subscribed.
        buffer: Per-client buffer (events); the bus default when None.
        refused: The answer to a request ``authorize`` refuses (default: ``401``).
    """

    async def endpoint(request: Request) -> Response:
        allowed = authorize(request)
        if inspect.isawaitable(allowed):
            allowed = await allowed
        if not allowed and refused is not None:
            return refused(request)
        if not allowed:
            headers = {"WWW-Authenticate": 'Bearer realm="lockgate"'}
            return JSONResponse({"error": "unauthorized"}, status_code=401, headers=headers)
        patterns = [p.strip() for p in request.query_params.get("types", "*").split(",")]
        patterns = [p for p in patterns if p]
        if not patterns or not all(_PATTERN.fullmatch(p) for p in patterns):
            return JSONResponse({"error": "invalid types pattern"}, status_code=400)
        last_id = request.headers.get("last-event-id", "").strip() or None
        return _EventStream(
            bus,
            patterns,
            last_id=last_id,
            keepalive=keepalive,
            retry_ms=retry_ms,
            buffer=buffer,
            visible=allowed if callable(allowed) else None,
        )

    return endpoint


class _EventStream(Response):
    """The streaming response; runs the stream and a disconnect watcher side by side."""

    media_type = "text/event-stream"

    def __init__(
        self,
        bus: EventBus,
        patterns: Sequence[str],
        *,
        last_id: str | None,
        keepalive: float,
        retry_ms: int,
        buffer: int | None,
        visible: Visible | None = None,
    ) -> None:
        # Not `Response.__init__`: without a body, no Content-Length is declared.
        self.status_code = 200
        self.background = None
        self.init_headers(_HEADERS)
        self._bus, self._patterns, self._last_id = bus, patterns, last_id
        self._keepalive, self._retry_ms, self._buffer = keepalive, retry_ms, buffer
        self._lock = anyio.Lock()
        self._scope = anyio.CancelScope()
        self._visible = visible

    async def _shown(self, event: Event) -> bool:
        """Control events always; others when the stream's scope accepts them."""
        return self._visible is None or event.type in CONTROL_TYPES or await self._visible(event)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._bus.subscribe(self._patterns, buffer=self._buffer, name="sse") as sub:
            backlog = None if self._last_id is None else self._bus.replay_after(self._last_id)
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            first = f"retry: {self._retry_ms}\n\n".encode()
            if self._last_id is not None:
                if backlog is None:
                    first += sse_frame(reset(self._last_id))
                else:
                    shown = [e for e in backlog if sub.matches(e.type) and await self._shown(e)]
                    first += b"".join(sse_frame(e) for e in shown)
            async with anyio.create_task_group() as tg:
                self._scope = tg.cancel_scope
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope)
                tg.start_soon(self._tick, send)
                await self._write(send, first)
                await self._pump(sub, send)
                await self._write(send, b"", more=False)
                tg.cancel_scope.cancel()

    async def _pump(self, sub: Subscription, send: Send) -> None:
        async for event in sub:
            if await self._shown(event):
                await self._write(send, sse_frame(event))

    async def _tick(self, send: Send) -> None:
        while True:
            await anyio.sleep(self._keepalive)
            await self._write(send, b": keep-alive\n\n")

    async def _write(self, send: Send, body: bytes, *, more: bool = True) -> None:
        async with self._lock:
            try:
                await send({"type": "http.response.body", "body": body, "more_body": more})
            except OSError:  # the client is gone (ASGI 2.4 servers raise instead of telling)
                self._scope.cancel()

    @staticmethod
    async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()
