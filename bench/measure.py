"""Measurement primitives: MCP clients on a target, latency samples, throughput, CPU probes."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

from bench.procs import children, cpu_seconds

Label = Literal["direct", "gateway"]
Transport = Literal["http", "stdio"]
ERAS = {"legacy": "legacy", "modern": "auto"}
"""Era name -> `mcp.Client` mode: ``legacy`` speaks 2025-11-25, ``auto`` negotiates 2026-07-28."""


@dataclass(frozen=True)
class Target:
    """Something an `mcp.Client` connects to: a URL, or a command it spawns over stdio."""

    label: Label
    transport: Transport
    server: str | StdioServerParameters
    prefix: str = ""
    pids: Mapping[str, int] = field(default_factory=dict)
    """Processes whose CPU is probed, by role (``server``, ``upstream``); stdio fills it late."""

    def tool(self, name: str) -> str:
        """The name of upstream tool ``name`` as this target exposes it."""
        return self.prefix + name


async def _refuse(*args: Any) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="the bench client answers nothing")


CAPABLE: dict[str, Any] = {
    "elicitation_callback": _refuse,
    "sampling_callback": _refuse,
    "list_roots_callback": _refuse,
}
"""Callbacks that make a client declare elicitation, sampling and roots (never asked here)."""


@contextlib.asynccontextmanager
async def connect(
    target: Target, era: str, *, capable: bool = False
) -> AsyncIterator[tuple[Client, Target]]:
    """An open client on ``target``; for stdio, the target comes back with the spawned pids.
    A ``capable`` client declares elicitation, sampling and roots."""
    before = set(children(os.getpid()))
    callbacks = CAPABLE if capable else {}
    mode = ERAS[era]
    async with Client(target.server, mode=mode, read_timeout_seconds=120, **callbacks) as client:
        if target.transport == "stdio":
            spawned = sorted(set(children(os.getpid())) - before)
            pids = {"server": spawned[0]} if spawned else {}
            if spawned and target.label == "gateway" and (kids := children(spawned[0])):
                pids["upstream"] = kids[0]
            target = Target(target.label, target.transport, target.server, target.prefix, pids)
        await until_listed(client, target.tool("echo"))
        yield client, target


async def until_listed(client: Client, tool: str, timeout: float = 60.0) -> None:
    """Wait until ``tool`` is listed: a gateway serves before its upstream is up, and a loaded
    machine can take seconds to start that upstream (a call before answers "Unknown tool")."""
    with anyio.fail_after(timeout):
        while True:  # the remote process says nothing when it is ready: ask it
            listed = await client.list_tools(cache_mode="bypass")
            if tool in {t.name for t in listed.tools}:
                return
            await anyio.sleep(0.1)


async def call_latencies(
    client: Client, tool: str, args: dict[str, Any], calls: int
) -> list[float]:
    """Microseconds per ``tools/call``, one after the other on one session."""
    samples: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        started = clock()
        result = await client.call_tool(tool, args)
        samples.append((clock() - started) / 1000)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result.content}")
    return samples


async def list_latencies(client: Client, calls: int, expect: int) -> list[float]:
    """Microseconds per ``tools/list`` (the client's response cache bypassed)."""
    samples: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        started = clock()
        listed = await client.list_tools(cache_mode="bypass")
        samples.append((clock() - started) / 1000)
        if len(listed.tools) != expect:
            raise RuntimeError(f"listed {len(listed.tools)} tools, expected {expect}")
    return samples


async def throughput(clients: list[Client], tool: str, args: dict[str, Any], calls: int) -> float:
    """Calls per second with every client calling ``calls // len(clients)`` times concurrently."""
    each = max(1, calls // len(clients))

    async def drive(client: Client) -> None:
        for _ in range(each):
            await client.call_tool(tool, args)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for client in clients:
            tg.start_soon(drive, client)
    return each * len(clients) / (time.perf_counter() - started)


def quantiles(samples: list[float]) -> dict[str, float]:
    """p50, p90 and p99 of ``samples``."""
    if len(samples) < 2:
        value = samples[0] if samples else 0.0
        return {"p50": value, "p90": value, "p99": value}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98]}


class CpuProbe:
    """CPU seconds spent by some processes between `start` and `stop`, accumulated."""

    def __init__(self, pids: Mapping[str, int]) -> None:
        self.pids = dict(pids)
        self.seconds = dict.fromkeys(self.pids, 0.0)
        self.calls = 0
        self._started: dict[str, float] = {}

    def start(self) -> None:
        self._started = {role: cpu_seconds(pid) for role, pid in self.pids.items()}

    def stop(self, calls: int) -> None:
        for role, pid in self.pids.items():
            self.seconds[role] += cpu_seconds(pid) - self._started[role]
        self.calls += calls

    def per_call_us(self) -> dict[str, float]:
        """Microseconds of CPU per call, by role."""
        return {role: s * 1e6 / max(1, self.calls) for role, s in self.seconds.items()}
