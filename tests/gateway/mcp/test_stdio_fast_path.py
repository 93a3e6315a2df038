"""The stdio fast path (`gateway/mcp/stdio_fast_path.py`): plain ``tools/call`` lines are answered
by the `CallHandler`, every other line by the SDK server, and the answers are the same.

Each test drives one stdio connection in-process, line by line, and checks which path answered
(``lockgate_mcp_requests_total{transport="stdio"}``), so these tests fail if the fast path is
switched off. ``lockgate stdio`` itself runs on it too: the last test checks the real process.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream
from gateway_faces import CLI, LEGACY, MODERN
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from support import answered, echo_upstream, write_config

from gateway.gateway import Gateway
from gateway.mcp.server import build_server
from gateway.mcp.stdio_fast_path import StdioFastPath

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
CLIENT = {"name": "raw-stdio", "version": "1.0"}
STDIO = "stdio"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("stdio-fast"), [echo_upstream("dual")])


@pytest.fixture(scope="module")
async def gateway(config: Path) -> AsyncIterator[Gateway]:
    async with Gateway.from_config(config) as gw:
        yield gw


@dataclass
class Wire:
    """One stdio connection served in-process: send lines, read what comes back."""

    era: str
    send: MemoryObjectSendStream[bytes]
    out: list[dict[str, Any]] = field(default_factory=list)
    written: anyio.Event = field(default_factory=anyio.Event)

    async def write(self, data: bytes) -> None:
        self.out.append(json.loads(data))
        self.written.set()
        self.written = anyio.Event()

    async def request(self, id: int, method: str, params: dict[str, Any]) -> None:
        if self.era == "modern":
            meta = params.setdefault("_meta", {})
            meta |= {
                PROTOCOL_VERSION_META_KEY: MODERN,
                CLIENT_CAPABILITIES_META_KEY: {},
                CLIENT_INFO_META_KEY: CLIENT,
            }
        message = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
        await self.send.send(json.dumps(message).encode() + b"\n")

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self.send.send(json.dumps(message).encode() + b"\n")

    async def answer(self, id: int) -> dict[str, Any]:
        while True:
            found = [m for m in self.out if m.get("id") == id and "method" not in m]
            if found:
                return found[0]
            await self.written.wait()

    async def open(self) -> Wire:
        if self.era == "legacy":
            params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}
            await self.request(0, "initialize", params)
            await self.answer(0)
            await self.notify("notifications/initialized", {})
            await self.request(1, "ping", {})  # the notification has been read once this answers
            await self.answer(1)
        return self


@contextlib.asynccontextmanager
async def connection(gateway: Gateway, era: str) -> AsyncIterator[Wire]:
    send, receive = anyio.create_memory_object_stream[bytes](100)
    wire = Wire(era, send)
    path = StdioFastPath(build_server(gateway, transport="stdio"), gateway.metrics)

    async def lines() -> AsyncIterator[bytes]:
        async with receive:
            async for line in receive:
                yield line

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(path.serve, lines(), wire.write)
            yield await wire.open()
            await send.aclose()


CALLS = [
    pytest.param("dual__echo", {"text": "héllo ✓ <&>"}, id="echo"),
    pytest.param("dual__echo", {"text": 3}, id="bad-arguments"),
    pytest.param("dual__fail", {"message": "boom"}, id="tool-error"),
    pytest.param("dual__nope", {}, id="unknown-tool"),
    pytest.param("dual__big", {"kib": 64}, id="big-result"),
]


@ERAS
@pytest.mark.parametrize(("name", "args"), CALLS)
async def test_the_fast_path_answers_what_the_sdk_answers(
    gateway: Gateway, era: str, name: str, args: dict[str, Any]
) -> None:
    async with connection(gateway, era) as wire:
        with answered(gateway.metrics, STDIO, fast=1, sdk=1):
            await wire.request(11, "tools/call", {"name": name, "arguments": args})
            fast = await wire.answer(11)
            params = {"name": name, "arguments": args, "_meta": {"progressToken": "p"}}
            await wire.request(12, "tools/call", params)
            sdk = await wire.answer(12)

    assert {k: v for k, v in fast.items() if k != "id"} == {
        k: v for k, v in sdk.items() if k != "id"
    }


async def test_a_legacy_call_before_the_session_is_initialized_goes_to_the_sdk(
    gateway: Gateway,
) -> None:
    async with connection(gateway, "modern") as wire:  # no handshake, no envelope below
        with answered(gateway.metrics, STDIO, fast=0, sdk=1):
            message = {"name": "dual__echo", "arguments": {"text": "early"}}
            await wire.send.send(
                json.dumps(
                    {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": message}
                ).encode()
            )
            response = await wire.answer(5)

    assert "error" in response


@ERAS
async def test_a_cancelled_fast_call_is_cancelled_upstream_and_never_answered(
    gateway: Gateway, era: str
) -> None:
    async with connection(gateway, era) as wire:
        async with gateway.events.subscribe(["tool.*"]) as events:
            await wire.request(
                21, "tools/call", {"name": "dual__slow", "arguments": {"steps": 999}}
            )
            async for event in events:
                if event.type == "tool.call":
                    break
            with answered(gateway.metrics, STDIO, fast=1, sdk=0):
                await wire.notify("notifications/cancelled", {"requestId": 21})
                async for event in events:
                    if event.type == "tool.result":
                        result = event
                        break
        await wire.request(22, "tools/call", {"name": "dual__echo", "arguments": {"text": "x"}})
        await wire.answer(22)

    assert result.data["response"]["content"][0]["text"] == (
        "The call was cancelled before it finished."
    )
    assert [m for m in wire.out if m.get("id") == 21] == []


def test_lockgate_stdio_serves_plain_calls_on_the_fast_path(config: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "dual__echo", "arguments": {"text": "over the wire"}}},
    ]  # fmt: skip
    with subprocess.Popen(
        [*CLI, "-v", "stdio", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        for line in lines[:2]:
            process.stdin.write(json.dumps(line).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0
        process.stdin.write(json.dumps(lines[2]).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        while "id" not in answer:  # list_changed: upstreams join after the gateway starts
            answer = json.loads(process.stdout.readline())
        _, stderr = process.communicate(timeout=30)

    assert process.returncode == 0, stderr
    assert b"Traceback" not in stderr
    assert answer["result"]["content"][0]["text"] == "over the wire"
    assert b"stdio: tools/call 1 answered on the fast path" in stderr


@ERAS
async def test_a_call_running_when_the_input_ends_is_answered_connection_closed(
    gateway: Gateway, era: str
) -> None:
    async with connection(gateway, era) as wire:
        async with gateway.events.subscribe(["tool.call"]) as events:
            await wire.request(
                31, "tools/call", {"name": "dual__slow", "arguments": {"steps": 999}}
            )
            await anext(events)
        await wire.send.aclose()
        response = await wire.answer(31)

    assert response["error"] == {"code": -32000, "message": "Connection closed"}


def test_lockgate_stdio_reads_a_file_on_stdin_through_the_sdk_transport(
    config: Path, tmp_path: Path
) -> None:
    requests = tmp_path / "requests.jsonl"
    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}) + "\n",
        encoding="utf-8",
    )
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [*CLI, "stdio", "--config", str(config)],
            stdin=stdin,
            capture_output=True,
            timeout=60,
            check=False,
        )

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["result"]["protocolVersion"] == LEGACY


@ERAS
async def test_a_cancel_read_right_after_its_call_still_cancels_it(
    gateway: Gateway, era: str
) -> None:
    async with connection(gateway, era) as wire:
        with answered(gateway.metrics, STDIO, fast=2, sdk=0):  # the cancel and the echo
            await wire.request(
                41, "tools/call", {"name": "dual__slow", "arguments": {"steps": 999}}
            )
            await wire.notify("notifications/cancelled", {"requestId": 41})
            await wire.request(42, "tools/call", {"name": "dual__echo", "arguments": {"text": "x"}})
            await wire.answer(42)

    assert [m for m in wire.out if m.get("id") == 41] == []


def test_lockgate_stdio_with_the_null_device_on_stdin_ends_at_once(config: Path) -> None:
    done = subprocess.run(
        [*CLI, "stdio", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
