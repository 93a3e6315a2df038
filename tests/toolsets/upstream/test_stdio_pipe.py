"""`StdioPipe` under `MCPServerToolset`: direct calls down a real stdio server's pipe.

Plain calls skip the SDK session (``pipe.direct_requests`` counts them); calls that want progress,
listings and list_changed still go through it, over the same pipe. Real subprocesses, no mocks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, PROTOCOL_VERSION_META_KEY
from support import ECHO_SERVER, logged
from support import call as call_tool

from toolsets import CallContext, UpstreamError
from toolsets.result import ToolResult
from toolsets.upstream.convert import tool_result_from_mcp
from toolsets.upstream.server import MCPServerToolset
from toolsets.upstream.stdio_pipe import StdioPipe

ERAS = [
    pytest.param("legacy", "legacy", "2025-11-25", id="legacy"),
    pytest.param("modern", "auto", "2026-07-28", id="modern"),
    pytest.param("dual", "auto", "2026-07-28", id="dual"),
]
LIMIT = 30
"""Hang guard per test: each runs in well under 2 s alone (a server start is ~0.6 s), and a
loaded machine (load average 6 on 2 cores) may take several times that."""

# A raw JSON-RPC server, handshake era only (``server/discover`` is an unknown method). It answers
# a cancelled ``hang`` call anyway, late: what a sloppy upstream does, and what the pipe must
# swallow for its abandoned ids. ``meta`` returns the ``_meta`` its request carried.
RAW_SERVER = r"""
import json, sys
def send(rid, key, value):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, key: value}) + "\n")
    sys.stdout.flush()
def text(value):
    return {"content": [{"type": "text", "text": value}]}
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "hang", "meta")]
for line in sys.stdin:
    msg = json.loads(line)
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method == "initialize":
        info = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
        send(rid, "result", {**info, "serverInfo": {"name": "raw", "version": "1"}})
    elif method == "tools/list":
        send(rid, "result", {"tools": TOOLS})
    elif method == "tools/call" and params["name"] == "echo":
        send(rid, "result", text(params["arguments"]["text"]))
    elif method == "tools/call" and params["name"] == "meta":
        send(rid, "result", text(json.dumps(params.get("_meta"))))
    elif method == "notifications/cancelled":
        send(params["requestId"], "result", text("late"))
    elif rid is not None and method != "tools/call":
        send(rid, "error", {"code": -32601, "message": "no"})
"""


@contextlib.asynccontextmanager
async def upstream(
    era: str, mode: Any, *, args: list[str] | None = None, **kwargs: Any
) -> AsyncIterator[MCPServerToolset]:
    """A toolset on a stdio server (the echo server in ``era`` unless ``args`` says otherwise)."""
    argv = args if args is not None else [ECHO_SERVER, "--era", era]

    def target() -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=argv)

    async with MCPServerToolset("up", target, mode=mode, **kwargs) as toolset:
        assert await toolset.wait_ready(LIMIT), toolset.detail
        yield toolset


class Progress:
    """A progress callback that records what it receives."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))


def raw_server(tmp_path: Path) -> list[str]:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER, encoding="utf-8")
    return [str(script)]


async def wait_cancelled(toolset: MCPServerToolset, results: list[ToolResult]) -> None:
    """A direct call that waits (up to 10 s) in the server until something ends it; a lost
    server ends it with `UpstreamError`, recorded as the error result a client would read."""
    try:
        results.append(await call_tool(toolset, "wait_cancelled", {"timeout": 10}, CallContext()))
    except UpstreamError as exc:
        results.append(ToolResult.error(str(exc)))


def pipe_of(toolset: MCPServerToolset) -> StdioPipe:
    assert toolset._pipe is not None
    return toolset._pipe


async def until(condition: Any) -> None:
    """Poll ``condition`` (a pipe's counter or state, which offers no event to wait on); each
    test's ``fail_after(LIMIT)`` bounds the wait."""
    while not condition():
        await anyio.sleep(0.01)


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_plain_calls_go_down_the_pipe_and_match_the_sdk_path(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe, client = pipe_of(toolset), toolset._client
            assert client is not None
            assert toolset.protocol_version == protocol
            if protocol == "2026-07-28":
                assert pipe.envelope is not None
                assert pipe.envelope[PROTOCOL_VERSION_META_KEY] == protocol
            else:
                assert pipe.envelope is None
            calls: list[tuple[str, dict[str, Any]]] = [
                ("echo", {"text": "héllo ✓"}),
                ("whoami", {}),
                ("fail", {"message": "boom"}),
                ("big", {"kib": 200}),
            ]
            direct: dict[str, ToolResult] = {}
            for name, args in calls:
                before = pipe.direct_requests
                direct[name] = await call_tool(toolset, name, args, CallContext())
                assert pipe.direct_requests == before + 1, name
                via_sdk = tool_result_from_mcp(await client.call_tool(name, dict(args)))
                assert pipe.direct_requests == before + 1, name
                assert direct[name] == via_sdk, name
    # The server saw the session's era on the direct request: the envelope went along.
    assert direct["whoami"].structured_content == {"protocol": protocol, "authorization": None}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_handshake_sessions_send_no_envelope_even_after_a_discover_probe(
    tmp_path: Path, mode: Any
) -> None:
    with anyio.fail_after(LIMIT):
        async with upstream("legacy", mode, args=raw_server(tmp_path)) as toolset:
            pipe, client = pipe_of(toolset), toolset._client
            assert client is not None
            assert toolset.protocol_version == "2025-11-25"
            via_sdk = tool_result_from_mcp(await client.call_tool("meta", {}))
            direct = await call_tool(toolset, "meta", {}, CallContext())
            assert pipe.direct_requests == 1
            # The server sees the same client either way: no 2026-07-28 envelope on either.
            assert direct.first_text() == via_sdk.first_text() == "null"
            assert pipe.envelope is None


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_calls_with_progress_go_through_the_sdk_session(
    era: str, mode: Any, protocol: str
) -> None:
    progress = Progress()
    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            before = pipe.direct_requests
            ctx = CallContext(progress=progress)
            result = await call_tool(toolset, "slow", {"steps": 3}, ctx)
            assert pipe.direct_requests == before
    assert result.first_text() == "done 3"
    assert not result.is_error
    assert progress.seen == [(step, 3, f"step {step}") for step in (1, 2, 3)]


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_concurrent_direct_and_sdk_calls_each_get_their_own_answer(
    era: str, mode: Any, protocol: str
) -> None:
    got: dict[str, str] = {}
    expected: dict[str, str] = {}
    listings: list[set[str]] = []

    def call(key: str, name: str, args: dict[str, Any], answer: str, sdk: bool = False) -> None:
        async def run() -> None:
            ctx = CallContext(progress=Progress() if sdk else None)
            result = await call_tool(toolset, name, args, ctx)
            assert not result.is_error, result
            got[key] = result.first_text()

        expected[key] = answer
        tg.start_soon(run)

    async def listing() -> None:
        assert toolset._client is not None
        listings.append({tool.name for tool in (await toolset._client.list_tools()).tools})

    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            async with anyio.create_task_group() as tg:
                for i in range(50):
                    call(f"direct {i}", "echo", {"text": f"direct {i}"}, f"direct {i}")
                    if i % 5 == 0:  # SDK calls: a progress callback takes them off the pipe
                        call(f"sdk {i}", "echo", {"text": f"sdk {i}"}, f"sdk {i}", sdk=True)
                    if i % 10 == 0:
                        call(f"slow {i}", "slow", {"steps": 2}, "done 2", sdk=True)
                        tg.start_soon(listing)
            assert pipe.direct_requests == 50
            assert not pipe._waiters
    assert len(expected) == 50 + 10 + 5
    assert got == expected
    assert len(listings) == 5
    assert all({"echo", "slow", "whoami"} <= names for names in listings)


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_upstream_errors_surface_as_mcp_errors_and_error_results(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            with pytest.raises(MCPError) as caught:
                await pipe.request("nope/method", {})
            assert caught.value.code == METHOD_NOT_FOUND
            before = pipe.direct_requests
            failed = await call_tool(toolset, "fail", {"message": "boom"}, CallContext())
            assert pipe.direct_requests == before + 1
            assert failed.is_error
            assert "boom" in failed.first_text()
            # The pipe is still good after both.
            ok = await call_tool(toolset, "echo", {"text": "still here"}, CallContext())
    assert ok.first_text() == "still here"
    assert not ok.is_error


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_cancelling_a_direct_call_cancels_it_upstream(
    era: str, mode: Any, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            # `StderrLog` logs each stderr line of the server: "slow: started" is said there.
            stderr = logged("lockgate.upstream.stderr", "slow: started")
            with stderr as started, anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call_tool, toolset, "slow", {"steps": 100}, CallContext())
                    await until(lambda: pipe.direct_requests == 1)
                    await started.wait()  # the server is inside the call
                    scope.cancel()
            assert not pipe._waiters
            assert list(pipe._abandoned) == ["lockgate-1"]
            seen = await call_tool(toolset, "wait_cancelled", {"timeout": 10}, CallContext())
            assert seen.structured_content == {"result": True}
            assert pipe.direct_requests == 2
            progress = Progress()
            sdk = await call_tool(toolset, "slow", {"steps": 1}, CallContext(progress=progress))
            assert sdk.first_text() == "done 1"
            assert progress.seen == [(1, 1, "step 1")]
            assert toolset.status == "up"
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_late_response_to_an_abandoned_request_never_reaches_the_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(LIMIT):
        async with upstream("legacy", "legacy", args=raw_server(tmp_path)) as toolset:
            pipe, client = pipe_of(toolset), toolset._client
            assert client is not None
            with anyio.move_on_after(0.2) as scope:
                await call_tool(toolset, "hang", {}, CallContext())
            assert scope.cancelled_caught
            # The server answers in order: the late "late" line came before each of these.
            after = await call_tool(toolset, "echo", {"text": "after"}, CallContext())
            assert after.first_text() == "after"
            assert not after.is_error
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["echo", "hang", "meta"]
            sdk = tool_result_from_mcp(await client.call_tool("echo", {"text": "sdk"}))
            assert sdk.first_text() == "sdk"
            assert toolset.status == "up"
            assert pipe.direct_requests == 2
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "lockgate-1" in m], messages
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_a_server_dying_mid_call_ends_the_call_and_the_toolset_reconnects(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            assert pipe._process is not None
            pid = pipe._process.pid
            results: list[ToolResult] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait_cancelled, toolset, results)
                await until(lambda: pipe.direct_requests == 1)
                os.kill(pid, signal.SIGKILL)
                with anyio.fail_after(5):  # at once, not after the call's own 10 s
                    await until(lambda: bool(results))
            [lost] = results
            assert lost.is_error
            assert "connection lost" in lost.first_text()
            assert not pipe.open
            await until(lambda: toolset.status == "up" and toolset._pipe not in (None, pipe))
            new_pipe = pipe_of(toolset)
            again = await call_tool(toolset, "echo", {"text": "back"}, CallContext())
            assert again.first_text() == "back"
            assert new_pipe.direct_requests == 1
            assert new_pipe._process is not None
            assert new_pipe._process.pid != pid


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_list_changed_refreshes_the_catalogue_after_a_direct_call(
    era: str, mode: Any, protocol: str
) -> None:
    changed: list[str] = []

    async def on_tools_changed(server: str) -> None:
        changed.append(server)

    with anyio.fail_after(LIMIT):
        async with upstream(era, mode, on_tools_changed=on_tools_changed) as toolset:
            pipe = pipe_of(toolset)
            assert "extra_1" not in toolset.tools
            added = await call_tool(toolset, "add_tool", {}, CallContext())
            assert added.first_text() == "extra_1"
            assert pipe.direct_requests == 1
            await until(lambda: "extra_1" in toolset.tools)
            assert set(changed) == {"up"}
            extra = await call_tool(toolset, "extra_1", {}, CallContext())
            assert extra.first_text() == "extra_1"
            assert pipe.direct_requests == 2


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_leaving_the_toolset_stops_the_server_even_with_a_direct_call_waiting(
    era: str, mode: Any, protocol: str
) -> None:
    results: list[ToolResult] = []
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            async with upstream(era, mode) as toolset:
                pipe = pipe_of(toolset)
                assert pipe._process is not None
                pid = pipe._process.pid
                tg.start_soon(wait_cancelled, toolset, results)
                await until(lambda: pipe.direct_requests == 1)
            assert toolset.status == "stopped"
            assert not pipe.open
            with pytest.raises(ProcessLookupError):  # gone and reaped
                os.kill(pid, 0)
    [ended] = results
    assert ended.is_error
    assert "connection lost" in ended.first_text()
