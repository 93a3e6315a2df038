"""Event machinery benchmarks: bus throughput by subscriber count, and per-call overhead.

Run: ``python bench/events.py`` (prints Markdown tables). Numbers are for one process on one core;
compare runs on the same machine only.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from gateway.audit.log import AuditLog
from gateway.audit.sink import AuditSink
from gateway.events import BusObserver, Event, EventBus, Subscription
from toolsets import CallContext, ExternalToolset, Principal, ToolDef, ToolResult
from toolsets.abstract import Toolset
from toolsets.events import EventsToolset

EVENTS = 100_000
BATCH = 500
CALLS = 5_000
TOOL = ToolDef(name="files__read", server="files", upstream_name="read")
ARGS = {"path": "/srv/data/report.csv", "encoding": "utf-8", "limit": 100}


async def _drain(subscription: Subscription) -> None:
    async for _ in subscription:
        pass


async def publish_rate(subscribers: int) -> float:
    """Events per second published and delivered to ``subscribers`` readers."""
    bus = EventBus("urn:lockgate:bench")
    event = Event(type="tool.call", data={"tool": "files__read", "args": ARGS})
    async with AsyncExitStack() as stack:
        subscriptions = [
            await stack.enter_async_context(bus.subscribe(["tool.*"])) for _ in range(subscribers)
        ]
        group = await stack.enter_async_context(anyio.create_task_group())
        for subscription in subscriptions:
            group.start_soon(_drain, subscription)
        started = time.perf_counter()
        for n in range(EVENTS):
            bus.publish(event)
            if n % BATCH == 0:
                await anyio.lowlevel.checkpoint()  # let readers drain, as calls would
        elapsed = time.perf_counter() - started
        bus.close()
    dropped = sum(bus.stats().dropped.values())
    if dropped:
        print(f"warning: {dropped} events dropped with {subscribers} subscribers", file=sys.stderr)
    return EVENTS / elapsed


async def _executor(tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    return ToolResult.text("name,value\nalpha,1\n")


async def _latencies(toolset: Toolset) -> list[float]:
    ctx = CallContext(principal=Principal(id="agent:bench"), session_id="s")
    samples = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await toolset.call_tool(TOOL.name, ARGS, ctx, TOOL)
        samples.append((time.perf_counter() - started) * 1e6)
        await anyio.lowlevel.checkpoint()
    return samples


async def call_latency(mode: str, db: Path) -> list[float]:
    """Microseconds per call of a trivial tool: ``off``, ``events`` (one reader), ``audit``."""
    base = ExternalToolset([TOOL], _executor)
    if mode == "off":
        return await _latencies(base)
    bus = EventBus("urn:lockgate:bench")
    async with AsyncExitStack() as stack:
        subscription = await stack.enter_async_context(bus.subscribe())
        group = await stack.enter_async_context(anyio.create_task_group())
        group.start_soon(_drain, subscription)
        if mode == "audit":
            log = await stack.enter_async_context(AuditLog(db))
            await stack.enter_async_context(AuditSink(bus, log, buffer=2 * CALLS + 10))
        samples = await _latencies(EventsToolset(base, BusObserver(bus)))
        bus.close()
    return samples


def _quantile(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q * 100) - 1]


async def main() -> None:
    print(f"## Bus: publish + delivery ({EVENTS:,} events)\n")
    print("| subscribers | events/s |\n|---:|---:|")
    for subscribers in (0, 1, 10, 100):
        print(f"| {subscribers} | {await publish_rate(subscribers):,.0f} |")
    print(f"\n## Call overhead (trivial executor, {CALLS:,} calls)\n")
    print("| mode | p50 µs | p99 µs |\n|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("off", "events", "audit"):
            samples = await call_latency(mode, Path(tmp) / "audit.db")
            p50, p99 = _quantile(samples, 0.5), _quantile(samples, 0.99)
            print(f"| {mode} | {p50:.1f} | {p99:.1f} |")


if __name__ == "__main__":
    anyio.run(main)
