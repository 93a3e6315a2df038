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
from support import ECHO_SERVER

from toolsets import CallContext
from toolsets.mcp_convert import tool_result_from_mcp
from toolsets.mcp_server import MCPServerToolset
from toolsets.result import ToolResult
from toolsets.stdio_pipe import StdioPipe

ERAS = [
    pytest.param("legacy", "legacy", "2025-11-25", id="legacy"),
    pytest.param("modern", "auto", "2026-07-28", id="modern"),
    pytest.param("dual", "auto", "2026-07-28", id="dual"),
]
LEGACY = ERAS[0].values[:2]

# A raw JSON-RPC server (legacy handshake) that answers a cancelled ``hang`` call anyway, late:
# what a sloppy upstream does, and what the pipe must swallow for its abandoned ids.
LATE_SERVER = r"""
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "hang")]
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        info = {"name": "late", "version": "1"}
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info}
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call" and msg["params"]["name"] == "echo":
        text = msg["params"]["arguments"]["text"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    elif method == "notifications/cancelled":
        late = {"content": [{"type": "text", "text": "late"}]}
        send({"jsonrpc": "2.0", "id": msg["params"]["requestId"], "result": late})
    elif rid is not None and method != "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
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
        assert await toolset.wait_ready(5), toolset.detail
        yield toolset


def pipe_of(toolset: MCPServerToolset) -> StdioPipe:
    assert toolset._pipe is not None
    return toolset._pipe


async def until(condition: Any) -> None:
    while not condition():
        await anyio.sleep(0.01)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_plain_calls_go_down_the_pipe_and_match_the_sdk_path(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe, client = pipe_of(toolset), toolset._client
            assert client is not None and toolset.protocol_version == protocol
            if protocol == "2026-07-28":
                assert pipe.envelope is not None
                assert pipe.envelope[PROTOCOL_VERSION_META_KEY] == protocol
            else:
                assert pipe.envelope is None
            calls = [
                ("echo", {"text": "héllo ✓"}),
                ("whoami", {}),
                ("fail", {"message": "boom"}),
                ("big", {"kib": 200}),
            ]
            for name, args in calls:
                before = pipe.direct_requests
                direct = await toolset.call_tool(name, args, CallContext())
                assert pipe.direct_requests == before + 1, name
                via_sdk = tool_result_from_mcp(await client.call_tool(name, dict(args)))
                assert pipe.direct_requests == before + 1, name
                assert direct == via_sdk, name
            # The server saw the session's era on the direct request: the envelope went along.
            whoami = await toolset.call_tool("whoami", {}, CallContext())
            assert whoami.structured_content is not None
            assert whoami.structured_content["protocol"] == protocol


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_calls_with_progress_go_through_the_sdk_session(
    era: str, mode: Any, protocol: str
) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            before = pipe.direct_requests
            ctx = CallContext(progress=on_progress)
            result = await toolset.call_tool("slow", {"steps": 3}, ctx)
            assert pipe.direct_requests == before
    assert result.first_text() == "done 3" and not result.is_error
    assert progress == [(step, 3, f"step {step}") for step in (1, 2, 3)]


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_concurrent_direct_and_sdk_calls_each_get_their_own_answer(
    era: str, mode: Any, protocol: str
) -> None:
    got: dict[str, str] = {}
    listings: list[set[str]] = []

    async def nothing(value: float, total: float | None, message: str | None) -> None:
        pass

    async def call(key: str, name: str, args: dict[str, Any], sdk: bool = False) -> None:
        ctx = CallContext(progress=nothing if sdk else None)
        result = await toolset.call_tool(name, args, ctx)
        assert not result.is_error, result
        got[key] = result.first_text()

    async def listing() -> None:
        assert toolset._client is not None
        listings.append({tool.name for tool in (await toolset._client.list_tools()).tools})

    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(call, f"direct {i}", "echo", {"text": f"direct {i}"})
                    if i % 5 == 0:
                        tg.start_soon(call, f"sdk {i}", "echo", {"text": f"sdk {i}"}, True)
                    if i % 10 == 0:
                        tg.start_soon(call, f"slow {i}", "slow", {"steps": 2}, True)
                        tg.start_soon(listing)
            assert pipe.direct_requests == 50
            assert not pipe._waiters
    assert {key: text for key, text in got.items() if not key.startswith("slow")} == {
        key: key for key in got if not key.startswith("slow")
    }
    assert len(got) == 50 + 10 + 5
    assert all(got[f"slow {i}"] == "done 2" for i in range(0, 50, 10))
    assert len(listings) == 5 and all({"echo", "slow", "whoami"} <= names for names in listings)


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_upstream_errors_surface_as_mcp_errors_and_error_results(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            with pytest.raises(MCPError) as caught:
                await pipe.request("nope/method", {})
            assert caught.value.code == METHOD_NOT_FOUND
            before = pipe.direct_requests
            failed = await toolset.call_tool("fail", {"message": "boom"}, CallContext())
            assert pipe.direct_requests == before + 1
            assert failed.is_error and "boom" in failed.first_text()
            # The pipe is still good after both.
            ok = await toolset.call_tool("echo", {"text": "still here"}, CallContext())
    assert ok.first_text() == "still here" and not ok.is_error


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_cancelling_a_direct_call_cancels_it_upstream(
    era: str, mode: Any, protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(toolset.call_tool, "slow", {"steps": 100}, CallContext())
                    await until(lambda: pipe.direct_requests == 1)
                    await anyio.sleep(0.1)  # the server is inside the call
                    scope.cancel()
            assert not pipe._waiters and list(pipe._abandoned) == ["lockgate-1"]
            seen = await toolset.call_tool("wait_cancelled", {"timeout": 2}, CallContext())
            assert seen.structured_content == {"result": True}
            assert pipe.direct_requests == 2
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, msg: str | None) -> None:
                progress.append(value)

            ctx = CallContext(progress=on_progress)
            sdk = await toolset.call_tool("slow", {"steps": 1}, ctx)
            assert sdk.first_text() == "done 1" and progress == [1]
            assert toolset.status == "up"
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_late_response_to_an_abandoned_request_never_reaches_the_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "late_server.py"
    script.write_text(LATE_SERVER, encoding="utf-8")
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(3):
        async with upstream(*LEGACY, args=[str(script)]) as toolset:
            pipe, client = pipe_of(toolset), toolset._client
            assert client is not None
            with anyio.move_on_after(0.2) as scope:
                await toolset.call_tool("hang", {}, CallContext())
            assert scope.cancelled_caught
            # The server answers in order: the late "late" line came before each of these.
            after = await toolset.call_tool("echo", {"text": "after"}, CallContext())
            assert after.first_text() == "after" and not after.is_error
            assert [tool.name for tool in (await client.list_tools()).tools] == ["echo", "hang"]
            sdk = tool_result_from_mcp(await client.call_tool("echo", {"text": "sdk"}))
            assert sdk.first_text() == "sdk"
            assert toolset.status == "up" and pipe.direct_requests == 2
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "lockgate-1" in m], messages
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_a_server_dying_mid_call_ends_the_call_and_the_toolset_reconnects(
    era: str, mode: Any, protocol: str
) -> None:
    with anyio.fail_after(3):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            assert pipe._process is not None
            pid = pipe._process.pid
            results: list[ToolResult] = []

            async def waiting_call() -> None:
                args = {"timeout": 10}
                results.append(await toolset.call_tool("wait_cancelled", args, CallContext()))

            async with anyio.create_task_group() as tg:
                tg.start_soon(waiting_call)
                await until(lambda: pipe.direct_requests == 1)
                os.kill(pid, signal.SIGKILL)
                with anyio.fail_after(1):
                    await until(lambda: bool(results))
            [lost] = results
            assert lost.is_error and "connection lost" in lost.first_text()
            assert not pipe.open
            await until(lambda: toolset.status == "up" and toolset._pipe not in (None, pipe))
            new_pipe = pipe_of(toolset)
            again = await toolset.call_tool("echo", {"text": "back"}, CallContext())
            assert again.first_text() == "back" and new_pipe.direct_requests == 1
            assert new_pipe._process is not None and new_pipe._process.pid != pid


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_list_changed_refreshes_the_catalogue_after_a_direct_call(
    era: str, mode: Any, protocol: str
) -> None:
    changed: list[str] = []

    async def on_tools_changed(server: str) -> None:
        changed.append(server)

    with anyio.fail_after(3):
        async with upstream(era, mode, on_tools_changed=on_tools_changed) as toolset:
            pipe = pipe_of(toolset)
            assert "extra_1" not in toolset.tools
            added = await toolset.call_tool("add_tool", {}, CallContext())
            assert added.first_text() == "extra_1" and pipe.direct_requests == 1
            await until(lambda: "extra_1" in toolset.tools)
            assert changed and set(changed) == {"up"}
            extra = await toolset.call_tool("extra_1", {}, CallContext())
            assert extra.first_text() == "extra_1" and pipe.direct_requests == 2


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_leaving_the_toolset_stops_the_server_even_with_a_direct_call_waiting(
    era: str, mode: Any, protocol: str
) -> None:
    results: list[ToolResult] = []
    with anyio.fail_after(3):
        async with anyio.create_task_group() as tg:
            async with upstream(era, mode) as toolset:
                pipe = pipe_of(toolset)
                assert pipe._process is not None
                pid = pipe._process.pid

                async def waiting_call() -> None:
                    args = {"timeout": 10}
                    results.append(await toolset.call_tool("wait_cancelled", args, CallContext()))

                tg.start_soon(waiting_call)
                await until(lambda: pipe.direct_requests == 1)
            assert toolset.status == "stopped" and not pipe.open
            assert not alive(pid)
    [ended] = results
    assert ended.is_error and "connection lost" in ended.first_text()
