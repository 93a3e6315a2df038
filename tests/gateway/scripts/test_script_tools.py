"""Script tools in the real sandbox (pydantic-monty workers): sub-calls through the whole gateway
(validated, decided by the policy, held for approval, recorded as events), variables per
session, and every limit stopping a run with a clear error while other calls go on."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from script_support import OPS, ctx, scripts_config
from support import MODES, serve_asgi

from gateway.audit.log import AuditLog
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.errors import ConfigError
from toolsets.result import ToolResult

COMPOSITE = '''
def run(text: str, city: str) -> dict:
    """Echo a text and report the weather."""
    echoed = tools.echo__echo(text=text)
    weather = tools.echo__weather(city=city)
    return {"echoed": echoed, "weather": weather}
'''
FAN_OUT = """
import asyncio

async def run(texts: list[str]) -> list:
    return await asyncio.gather(*[async_tools.echo__echo(text=t) for t in texts])
"""
DENIED = """
def run() -> str:
    return tools.echo__fail(message="x")
"""
COUNTER = """
def run() -> int:
    count = ctx.get_variable("count", 0) + 1
    ctx.set_variable("count", count)
    return count
"""


async def _call(gateway: Gateway, name: str, args: dict[str, Any], session: str = "s1") -> Any:
    return await gateway.call_tool(name, args, ctx(session))


async def test_a_composite_script_waits_for_its_held_sub_call_and_links_the_events(
    tmp_path: Path,
) -> None:
    config = scripts_config(tmp_path, {"composite": COMPOSITE})
    results: list[ToolResult] = []
    async with (
        Gateway.from_config(config) as gateway,
        gateway.events.subscribe(["tool.call", "tool.approval.requested"]) as events,
        anyio.create_task_group() as tg,
    ):
        tools = await gateway.tools(ctx())
        schema = tools["ops__composite"].input_schema
        assert schema["required"] == ["text", "city"]
        assert tools["ops__composite"].description == "Echo a text and report the weather."

        async def call() -> None:
            results.append(await _call(gateway, "ops__composite", {"text": "hi", "city": "Oslo"}))

        tg.start_soon(call)
        seen = []
        with anyio.fail_after(20):
            async for event in events:
                seen.append(event)
                if event.type == "tool.approval.requested":
                    break
        approval = seen[-1].data["approval_id"]
        await gateway.approvals.decide(approval, "approve", by=OPS, channel="api")
    assert results[0].structured_content == {
        "echoed": "hi",
        "weather": {"city": "Oslo", "sky": "clear"},
    }
    script_call = next(e for e in seen if e.data["tool"] == "ops__composite")
    sub_calls = [e for e in seen if e.type == "tool.call" and e.data["tool"] != "ops__composite"]
    assert [e.data["tool"] for e in sub_calls] == ["echo__echo"]
    assert sub_calls[0].data["parent_call_id"] == script_call.data["call_id"]
    assert seen[-1].data["parent_call_id"] == script_call.data["call_id"]
    async with AuditLog(tmp_path / "var" / "audit.db") as audit:
        logged = [e.body["data"] for e in await audit.tail(50) if e.kind == "tool.result"]
    parents = {d["tool"]: d.get("parent_call_id") for d in logged}
    assert parents["echo__weather"] == script_call.data["call_id"]
    assert parents["ops__composite"] is None


async def test_async_tools_fan_out_and_a_denied_sub_call_reaches_the_model(
    tmp_path: Path,
) -> None:
    config = scripts_config(tmp_path, {"fan_out": FAN_OUT, "denied": DENIED})
    async with Gateway.from_config(config) as gateway:
        fanned = await _call(gateway, "ops__fan_out", {"texts": ["a", "b", "c"]})
        denied = await _call(gateway, "ops__denied", {})
    assert fanned.first_text() == '["a", "b", "c"]'
    assert denied.is_error
    assert "echo__fail is not allowed here." in denied.first_text()


async def test_variables_persist_in_a_session_and_not_across_sessions(tmp_path: Path) -> None:
    config = scripts_config(tmp_path, {"counter": COUNTER})
    async with Gateway.from_config(config) as gateway:
        counts = [
            (await _call(gateway, "ops__counter", {}, session)).first_text()
            for session in ("s1", "s1", "s2", "s1")
        ]
    assert counts == ["1", "2", "1", "3"]


LIMITED = {
    "loop": ("def run():\n    while True:\n        pass\n", "time limit (1 s, limits.timeout)"),
    "bomb": ("def run():\n    x = [0] * (10 ** 9)\n", "memory limit (16 MiB, limits.memory_mb)"),
    "deep": (
        "def f(n):\n    return f(n + 1)\n\ndef run():\n    return f(0)\n",
        "recursion limit (50, limits.recursion)",
    ),
    "opens": ("def run():\n    return open('/etc/passwd').read()\n", "PermissionError"),
    "chatty": (
        "def run():\n    return [tools.echo__echo(text=str(i)) for i in range(5)]\n",
        "sub-call limit (3, limits.sub_calls)",
    ),
}


@pytest.mark.parametrize("name", list(LIMITED))
async def test_each_limit_stops_a_run_with_a_clear_error_and_other_calls_go_on(
    tmp_path: Path, name: str
) -> None:
    source, expected = LIMITED[name]
    limits = {"timeout": 1, "memory_mb": 16, "recursion": 50, "sub_calls": 3}
    config = scripts_config(tmp_path, {name: source}, limits=limits)
    control: list[float] = []
    latencies: list[float] = []
    async with Gateway.from_config(config) as gateway, anyio.create_task_group() as tg:
        await _call(gateway, "echo__echo", {"text": "warm"})  # upstream connected, worker up

        async def ordinary(latencies: list[float]) -> None:
            for _ in range(5):
                started = time.perf_counter()
                assert (await _call(gateway, "echo__echo", {"text": "x"})).first_text() == "x"
                latencies.append(time.perf_counter() - started)
                await anyio.sleep(0.1)  # the behaviour: calls spread over the script's run

        await ordinary(control)  # the same calls with no script running: this machine's noise
        tg.start_soon(ordinary, latencies)
        failed = await _call(gateway, f"ops__{name}", {})
        again = await _call(gateway, "echo__echo", {"text": "after"})
    assert failed.is_error
    assert expected in failed.first_text()
    assert f"ops__{name}" in failed.first_text()
    assert again.first_text() == "after"
    # A script stuck in a loop does not hold up other calls: none is slower than the slowest
    # call without it by more than 0.75 s (the run is stopped after 1 s).
    assert max(latencies) < max(control) + 0.75


@pytest.mark.parametrize("module", ["os", "socket", "subprocess"])
def test_importing_what_the_sandbox_lacks_is_a_config_error_with_its_line(
    tmp_path: Path, module: str
) -> None:
    source = f"def run():\n    import {module}\n    return 1\n"
    with pytest.raises(ConfigError, match=f"line 2.*{module}|{module}.*line 2|:2"):
        Gateway.from_config(scripts_config(tmp_path, {"sneaky": source}))


def _sandbox_workers() -> dict[int, int]:
    """This process's sandbox worker processes: the CPU ticks each has used, by pid."""
    mine = str(os.getpid())
    workers = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if stat[1] == mine and b"monty" in command:
            workers[int(entry.name)] = int(stat[11]) + int(stat[12])
    return workers


async def _busy_workers() -> list[int]:
    """The sandbox workers whose CPU time grew over 0.3 s: running a script (or starting).
    Another process's CPU time is seen only by sampling it, here 0.3 s apart."""
    before = _sandbox_workers()
    await anyio.sleep(0.3)
    return [pid for pid, ticks in _sandbox_workers().items() if ticks > before.get(pid, ticks)]


async def _until_busy(want: bool) -> list[int]:
    with anyio.fail_after(20):
        while bool(busy := await _busy_workers()) != want:
            pass
    return busy


async def test_a_crashed_worker_is_replaced_and_the_next_run_works(tmp_path: Path) -> None:
    loop = "def run():\n    while True:\n        pass\n"
    config = scripts_config(tmp_path, {"loop": loop, "counter": COUNTER}, limits={"timeout": 10})
    async with Gateway.from_config(config) as gateway, anyio.create_task_group() as tg:
        results: list[ToolResult] = []
        ended = anyio.Event()

        async def looping() -> None:
            results.append(await _call(gateway, "ops__loop", {}))
            ended.set()

        before = set(_sandbox_workers())
        await _until_busy(False)  # the workers have started
        tg.start_soon(looping)
        os.kill((await _until_busy(True))[0], signal.SIGKILL)  # the one running ``loop``
        with anyio.fail_after(30):
            await ended.wait()
        after = await _call(gateway, "ops__counter", {})
    assert before
    assert results[0].is_error
    assert "crashed its sandbox worker" in results[0].first_text()
    assert after.first_text() == "1"


@pytest.mark.parametrize("mode", MODES)
async def test_script_tools_over_mcp_in_both_eras(tmp_path: Path, mode: str) -> None:
    config = scripts_config(tmp_path, {"fan_out": FAN_OUT})
    async with (
        serve_asgi(build_app(Gateway.from_config(config))) as base,
        Client(f"{base}/mcp", mode=mode) as client,
    ):
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("ops__fan_out", {"texts": ["x", "y"]})
        invalid = await client.call_tool("ops__fan_out", {"texts": "not a list"})
    assert listed["ops__fan_out"].input_schema["properties"]["texts"]["type"] == "array"
    assert result.content[0].text == '["x", "y"]'  # type: ignore[union-attr]
    assert invalid.is_error  # refused before the sandbox ran


async def test_warm_sessions_never_share_module_state_across_sessions(tmp_path: Path) -> None:
    remembers = """
seen = []

def run(note: str) -> list:
    seen.append(note)
    return list(seen) + [tools.echo__echo(text=ctx.principal)]
"""
    config = scripts_config(tmp_path, {"remembers": remembers}, workers=4)
    async with Gateway.from_config(config) as gateway:
        first = [
            json.loads(
                (await _call(gateway, "ops__remembers", {"note": f"a{i}"}, "s1")).first_text()
            )
            for i in range(3)
        ]
        other = json.loads(
            (await _call(gateway, "ops__remembers", {"note": "b"}, "s2")).first_text()
        )
    assert first[0] == ["a0", "agent:a"]
    assert other == ["b", "agent:a"]  # s1's notes never reach s2
    assert all(run[-2] == f"a{i}" for i, run in enumerate(first))
