"""`StdioPipe` writes: concurrent senders' lines share writes down a real stdio server's pipe,
in order, each request answered, none lost when a writer is cancelled. Real subprocesses."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import call as call_tool

from tests.toolsets.upstream.test_stdio_pipe import ERAS, LIMIT, pipe_of, until, upstream
from toolsets import CallContext


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_concurrent_requests_share_writes_and_each_gets_its_own_response(
    era: str, mode: Any, protocol: str
) -> None:
    got: dict[int, str] = {}

    async def echo(i: int) -> None:
        result = await pipe.request("tools/call", {"name": "echo", "arguments": {"text": str(i)}})
        got[i] = result["content"][0]["text"]

    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            await call_tool(toolset, "echo", {"text": "warm"}, CallContext())
            before, direct = pipe.writes, pipe.direct_requests
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(echo, i)
            writes = pipe.writes - before
            assert pipe.direct_requests - direct == 40
            lone = await call_tool(toolset, "echo", {"text": "alone"}, CallContext())
            assert pipe.writes - before == writes + 1  # a lone request is one write of its own
    assert got == {i: str(i) for i in range(40)}
    assert 1 <= writes < 40, writes
    assert lone.first_text() == "alone"


@pytest.mark.parametrize(("era", "mode", "protocol"), ERAS)
async def test_a_writer_cancelled_with_others_lines_queued_still_writes_them(
    era: str, mode: Any, protocol: str
) -> None:
    got: dict[int, str] = {}
    first = anyio.CancelScope()

    async def echo(i: int) -> None:
        result = await pipe.request("tools/call", {"name": "echo", "arguments": {"text": str(i)}})
        got[i] = result["content"][0]["text"]

    async def cancelled_first() -> None:
        with first:  # cancelled before it starts: its writing is all it does
            await echo(-1)

    with anyio.fail_after(LIMIT):
        async with upstream(era, mode) as toolset:
            pipe = pipe_of(toolset)
            async with anyio.create_task_group() as waiting:
                # A request in flight: the first sender of a turn waits for the others to join.
                args = {"name": "wait_cancelled", "arguments": {"timeout": 10}}
                waiting.start_soon(pipe.request, "tools/call", args)
                await until(lambda: pipe.direct_requests == 1)
                async with anyio.create_task_group() as calls:
                    calls.start_soon(cancelled_first)
                    for i in range(10):
                        calls.start_soon(echo, i)
                    first.cancel()
                waiting.cancel_scope.cancel()
            assert first.cancelled_caught
            assert "lockgate-2" in pipe._abandoned
            after = await call_tool(toolset, "echo", {"text": "after"}, CallContext())
    assert got == {i: str(i) for i in range(10)}
    assert after.first_text() == "after"
