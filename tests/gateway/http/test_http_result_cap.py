"""A result over ``max_result_bytes`` from an HTTP or SSE upstream is an error result naming the
limit, refused while reading: the gateway holds about the limit, never the whole result, and
the upstream stays usable. `ResponseLimit` itself is tested against a Starlette app of its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.lowlevel
import httpx2
import pytest
from gateway_faces import LEGACY, MODERN, echo_over, running, text_of
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from support import serve_asgi, write_config

from gateway.gateway import Gateway
from toolsets import jsonwire
from toolsets.upstream.http_limit import ResponseLimit
from toolsets.upstream.stdio_pipe import TOO_LARGE

MIB = 1 << 20
Transport = Literal["http", "sse"]
REMOTE = [
    pytest.param("http", "dual", MODERN, id="streamable-http-modern"),
    pytest.param("http", "legacy", LEGACY, id="streamable-http-legacy"),
    pytest.param("sse", "dual", MODERN, id="sse-modern"),
    pytest.param("sse", "legacy", LEGACY, id="sse-legacy"),
]


class Growth:
    """How far the process's resident memory rose above where it was: its peak, where the
    kernel lets us reset the peak (Linux ``clear_refs``), else its current size."""

    def __init__(self) -> None:
        self.before = _status_kib("VmRSS")
        self.peak_reset = _reset_peak()
        self.mib = 0.0

    def stop(self) -> None:
        after = _status_kib("VmHWM" if self.peak_reset else "VmRSS")
        self.mib = (after - self.before) / 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def _reset_peak() -> bool:
    """Reset the peak (VmHWM) to the current RSS, where the kernel lets us."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


@contextlib.contextmanager
def memory_growth() -> Iterator[Growth]:
    growth = Growth()
    try:
        yield growth
    finally:
        growth.stop()


@contextlib.asynccontextmanager
async def remote_gateway(
    tmp_path: Path, transport: Transport, era: str, **extra: Any
) -> AsyncIterator[Gateway]:
    """A gateway whose one upstream ``web`` is an echo server over ``transport``."""
    argv, port, url = echo_over(transport, era=era, name="web")
    config = write_config(tmp_path, [{"name": "web", "transport": transport, "url": url, **extra}])
    async with running([(argv, port)]), Gateway.from_config(config) as gateway:
        yield gateway


@pytest.mark.parametrize(("transport", "era", "protocol"), REMOTE)
async def test_a_remote_result_over_the_limit_is_an_error_result_and_never_held_whole(
    tmp_path: Path, transport: Transport, era: str, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with remote_gateway(tmp_path, transport, era, max_result_bytes=MIB) as gateway:
        await gateway.call_tool("web__echo", {"text": "warm"})  # connected, buffers allocated
        with memory_growth() as growth, anyio.fail_after(60):
            huge = await gateway.call_tool("web__big", {"kib": 50 * 1024})  # 50 MiB, twice
        fine = await gateway.call_tool("web__big", {"kib": 256})
        echoed = await gateway.call_tool("web__echo", {"text": "still here"})
        upstream = gateway.upstreams["web"]
    assert upstream.protocol_version == protocol
    assert huge.is_error
    assert f"over the gateway's limit of {MIB} bytes (max_result_bytes)" in text_of(huge)
    assert growth.mib < 40, f"the gateway grew by {growth.mib:.0f} MiB for a 100 MiB response"
    assert len(text_of(fine)) == 256 * 1024
    assert text_of(echoed) == "still here"
    warnings = [r.getMessage() for r in caplog.records if r.name == "lockgate.upstream"]
    over = [w for w in warnings if "over the limit" in w]
    assert len(over) == 1, over
    assert over[0].startswith("upstream web sent a message of ")
    assert f"over the limit of {MIB} (max_result_bytes); not relayed" in over[0]


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_a_streamable_http_result_over_the_sdks_event_limit_but_under_ours_is_relayed(
    tmp_path: Path, era: str
) -> None:
    # The SDK limits one event to 1 MiB; the limit configured (16 MiB) is the one that counts.
    async with remote_gateway(tmp_path, "http", era) as gateway:
        big = await gateway.call_tool("web__big", {"kib": 4 * 1024})
    assert not big.is_error
    assert len(text_of(big)) == 4 * MIB


@pytest.mark.parametrize("era", ["dual", "legacy"])
async def test_an_sse_result_over_the_sdks_event_limit_is_an_error_result_not_a_lost_connection(
    tmp_path: Path, era: str
) -> None:
    # The SDK's sse_client drops the whole connection on an event over 1 MiB: the gateway
    # refuses such a result first, naming that limit.
    async with remote_gateway(tmp_path, "sse", era) as gateway:
        big = await gateway.call_tool("web__big", {"kib": 2 * 1024})
        echoed = await gateway.call_tool("web__echo", {"text": "still here"})
        status = gateway.upstreams["web"].status
    assert big.is_error
    assert f"limit of {MIB} bytes (max_result_bytes, at most {MIB} over sse)" in text_of(big)
    assert text_of(echoed) == "still here"
    assert status == "up"


# -- ResponseLimit against a Starlette app ---------------------------------------------------

LIMIT = 64 * 1024
OVER = MIB
"""An event over the limit that the client must read through (a shared stream)."""
HUGE = 64 * MIB
"""A body the client must not read through: the server stops long before its end."""
CHUNK = 64 * 1024


class Upstream:
    """A Starlette app sending big JSON bodies, events and text in chunks; it counts the bytes
    it got to send, and sets ``stopped`` when a response ended (read whole or not)."""

    def __init__(self) -> None:
        self.sent = 0
        self.stopped = anyio.Event()
        self.app = Starlette(
            routes=[
                Route("/json", self.json, methods=["POST"]),
                Route("/events", self.events, methods=["GET", "POST"]),
                Route("/text", self.text, methods=["GET"]),
            ]
        )

    async def _body(self, head: bytes, size: int, tail: bytes) -> AsyncIterator[bytes]:
        yield head
        for _ in range(size // CHUNK):
            yield b"x" * CHUNK
            self.sent += CHUNK
            # Sends to a client that went away return at once: let the server notice it.
            await anyio.lowlevel.checkpoint()
        yield tail

    def _streaming(self, parts: list[AsyncIterator[bytes]], media_type: str) -> Response:
        async def stopped() -> None:  # runs after the body, or after the client went away
            self.stopped.set()

        return StreamingResponse(
            _chain(parts), media_type=media_type, background=BackgroundTask(stopped)
        )

    async def json(self, request: Request) -> Response:
        ask = jsonwire.loads(await request.body())
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": ask["id"], "result": {"ok": True}}
        if ask["params"]["size"] == "small":
            return Response(jsonwire.dumps(reply), media_type="application/json")
        head = b'{"jsonrpc":"2.0","id":%s,"result":{"text":"' % jsonwire.dumps(ask["id"])
        response = self._streaming([self._body(head, HUGE, b'"}}')], "application/json")
        if ask["params"]["size"] == "sized":  # refused on its Content-Length alone
            response.headers["content-length"] = str(len(head) + HUGE + 3)
        return response

    async def events(self, request: Request) -> Response:
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
        log = b'{"jsonrpc":"2.0","method":"notifications/message","params":"'
        if request.method == "POST":
            ask = jsonwire.loads(await request.body())
            answer = b'{"jsonrpc":"2.0","id":%s,"result":"' % jsonwire.dumps(ask["id"])
            events = [_event(progress), self._event(log, OVER), self._event(answer, HUGE)]
        else:
            events = [
                _event(progress),
                self._event(b'{"jsonrpc":"2.0","id":7,"result":"', OVER, crlf=True, id_=b"e7"),
                self._event(b'{"result":"', OVER, b'","jsonrpc":"2.0","id":"abc"}'),
                self._event(log, OVER),
                self._event(b'{"result":"', OVER, b'","meta":{"id":8}}'),
                _event({"jsonrpc": "2.0", "id": 9, "result": {"ok": True}}),
            ]
        return self._streaming(events, "text/event-stream")

    def _event(
        self, head: bytes, size: int, tail: bytes = b'"}', *, crlf: bool = False, id_: bytes = b""
    ) -> AsyncIterator[bytes]:
        """An event of ``size`` bytes and more: ``head`` and ``tail`` are its data's ends."""
        newline = b"\r\n" if crlf else b"\n"
        fields = b"event: message" + newline + (b"id: " + id_ + newline if id_ else b"")
        return self._body(fields + b"data: " + head, size, tail + newline * 2)

    async def text(self, request: Request) -> Response:
        return self._streaming([self._body(b"", HUGE, b"")], "text/plain")


async def _event(message: dict[str, Any]) -> AsyncIterator[bytes]:
    yield b"event: message\ndata: " + jsonwire.dumps(message) + b"\n\n"


async def _chain(parts: list[AsyncIterator[bytes]]) -> AsyncIterator[bytes]:
    for part in parts:
        async for chunk in part:
            yield chunk


@contextlib.asynccontextmanager
async def limited() -> AsyncIterator[tuple[httpx2.AsyncClient, Upstream, str]]:
    """A client whose transport is `ResponseLimit` (``LIMIT``), the upstream, its base URL."""
    upstream = Upstream()
    transport = ResponseLimit(httpx2.AsyncHTTPTransport(), limit=LIMIT, server="unit")
    async with serve_asgi(upstream.app) as base, httpx2.AsyncClient(transport=transport) as client:
        yield client, upstream, base


def _call(request_id: int | str, size: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"size": size}}


def _too_large(message: Any, request_id: int | str) -> str:
    """The message of the error ``message`` carries for ``request_id`` (its shape asserted)."""
    assert message["id"] == request_id
    assert message["error"]["code"] == -32603
    assert message["error"]["data"][TOO_LARGE] > LIMIT
    text = str(message["error"]["message"])
    assert f"over the gateway's limit of {LIMIT} bytes (max_result_bytes)" in text
    return text


@pytest.mark.parametrize("size", ["sized", "chunked"])
async def test_a_json_body_over_the_limit_becomes_an_error_for_the_request_unread(
    size: str,
) -> None:
    async with limited() as (client, upstream, base):
        with anyio.fail_after(20):
            response = await client.post(f"{base}/json", json=_call("call-1", size))
            await upstream.stopped.wait()
        small = await client.post(f"{base}/json", json=_call(2, "small"))
    text = _too_large(response.json(), "call-1")
    assert upstream.sent < HUGE // 2, "the body was read on past the limit"
    assert ("is 67108" if size == "sized" else "is at least") in text
    assert small.json() == {"jsonrpc": "2.0", "id": 2, "result": {"ok": True}}


async def test_a_request_stream_answers_its_request_at_once_and_drops_big_notifications(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with limited() as (client, upstream, base):
        with anyio.fail_after(20):
            async with client.stream("POST", f"{base}/events", json=_call(5, "")) as response:
                events = [jsonwire.loads(sse.data) async for sse in httpx2.EventSource(response)]
            await upstream.stopped.wait()
    assert [e.get("method") for e in events] == ["notifications/progress", None]
    _too_large(events[1], 5)
    assert upstream.sent < OVER + HUGE // 2, "the response event was read on past the limit"
    warnings = [r.getMessage() for r in caplog.records if r.name == "lockgate.upstream"]
    assert len(warnings) == 2
    assert all(w.startswith("upstream unit sent a message of ") for w in warnings)
    assert "xxxx" not in caplog.text


async def test_a_shared_stream_answers_the_responses_it_can_name_and_drops_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with limited() as (client, upstream, base):
        with anyio.fail_after(30):
            async with client.stream("GET", f"{base}/events") as response:
                received = [sse async for sse in httpx2.EventSource(response)]
    events = [jsonwire.loads(sse.data) for sse in received]
    assert len(events) == 4
    assert events[0]["method"] == "notifications/progress"
    _too_large(events[1], 7)  # the id first, CRLF line ends
    assert received[1].id == "e7"  # the dropped event's id, for a resumption
    _too_large(events[2], "abc")  # the id last
    assert events[3] == {"jsonrpc": "2.0", "id": 9, "result": {"ok": True}}
    assert upstream.sent == 4 * OVER  # a shared stream is read through: later events count
    warnings = [r.getMessage() for r in caplog.records if r.name == "lockgate.upstream"]
    dropped = [w for w in warnings if w.endswith("dropped (not a response with an id)")]
    assert len(warnings) == 4
    assert len(dropped) == 2  # the notification, and the response whose id is nested
    assert all(f"over the limit of {LIMIT} (max_result_bytes)" in w for w in warnings)


async def test_any_other_body_is_cut_at_the_limit() -> None:
    async with limited() as (client, upstream, base):
        with anyio.fail_after(20):
            response = await client.get(f"{base}/text")
            await upstream.stopped.wait()
    assert response.content == b"x" * LIMIT
    assert upstream.sent < HUGE // 2
