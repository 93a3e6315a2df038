"""The benchmark run: every scenario, direct and gateway in interleaved rounds.

Each scenario opens its clients on both targets first, warms them up, then alternates measured
rounds: direct, gateway, direct, gateway, ... Under a shared, noisy machine the per-round ratio
gateway/direct is far steadier than either number, so rows report the median of those ratios.
"""

from __future__ import annotations

import contextlib
import fnmatch
import statistics
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp import Client, StdioServerParameters

from bench.measure import (
    CpuProbe,
    Target,
    call_latencies,
    connect,
    list_latencies,
    quantiles,
    throughput,
)
from bench.procs import (
    GATEWAY_CLI,
    POLICY,
    PREFIX,
    gateway_launch,
    serve,
    upstream_command,
    upstream_launch,
    write_config,
)

Metric = Literal["latency", "throughput", "cpu"]
SMALL, LARGE = 3, 100
ECHO = ("echo", {"text": "hello, gateway"})
BIG = ("big", {"kib": 256})


@dataclass(frozen=True)
class Settings:
    """How much to measure."""

    rounds: int = 5
    calls: int = 400
    concurrent_calls: int = 640
    big_calls: int = 40
    list_calls: int = 100
    list_large_calls: int = 30
    warmup: int = 20
    eras: tuple[str, ...] = ("legacy", "modern")
    transports: tuple[str, ...] = ("http", "stdio")
    only: str = "*"
    audit: bool = True
    capable: bool = False
    policy: str = str(POLICY)

    def wants(self, key: str) -> bool:
        """Whether ``transport/era/name`` is selected by ``only`` (comma-separated globs)."""
        return any(fnmatch.fnmatch(key, glob.strip()) for glob in self.only.split(","))


QUICK = Settings(
    rounds=2, calls=20, concurrent_calls=32, big_calls=3, list_calls=5, list_large_calls=3,
    warmup=2,
)  # fmt: skip


@dataclass
class Row:
    """One scenario's outcome: per-round values of both targets and the median ratio."""

    transport: str
    era: str
    scenario: str
    metric: Metric
    direct: list[dict[str, float]] = field(default_factory=list)
    gateway: list[dict[str, float]] = field(default_factory=list)
    ratio: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.transport}/{self.era}/{self.scenario}"


@dataclass(frozen=True)
class Pair:
    """Direct and gateway targets of one transport and catalogue size."""

    direct: Target
    gateway: Target


Measure = Callable[[Client, Target], Awaitable[dict[str, float]]]


class Bench:
    """Runs the scenarios; results accumulate in ``rows``."""

    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.settings = settings
        self.workdir = workdir
        self.log = workdir / "processes.log"
        self.rows: list[Row] = []

    def note(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    async def run(self) -> list[Row]:
        """Every selected scenario over every selected transport and era."""
        for transport in self.settings.transports:
            with self._pairs(transport) as pairs:
                for era in self.settings.eras:
                    await self._era(transport, era, pairs)
        return self.rows

    @contextlib.contextmanager
    def _pairs(self, transport: str) -> Iterator[dict[int, Pair]]:
        if transport == "stdio":
            yield {n: self._stdio_pair(n) for n in (SMALL, LARGE)}
            return
        sizes = [n for n in (SMALL, LARGE) if n == SMALL or self._any(transport, "tools/list 100")]
        launches = []
        for tools in sizes:
            launches += [
                upstream_launch(tools),
                gateway_launch(
                    self.workdir,
                    tools,
                    audit=self.settings.audit,
                    policy=Path(self.settings.policy),
                ),
            ]
        with serve(launches, self.log) as served:
            pairs = {}
            for index, tools in enumerate(sizes):
                up, gw = served[2 * index], served[2 * index + 1]
                upstream = {"upstream": pid} if (pid := gw.upstream_pid()) else {}
                pairs[tools] = Pair(
                    Target("direct", "http", up.url, pids={"server": up.pid}),
                    Target("gateway", "http", gw.url, PREFIX, {"server": gw.pid, **upstream}),
                )
            yield pairs

    def _stdio_pair(self, tools: int) -> Pair:
        command = upstream_command(tools)
        s = self.settings
        config = write_config(self.workdir, tools, audit=s.audit, policy=Path(s.policy))
        gateway = [*GATEWAY_CLI, "stdio", "-c", str(config)]
        return Pair(
            Target("direct", "stdio", StdioServerParameters(command=command[0], args=command[1:])),
            Target(
                "gateway",
                "stdio",
                StdioServerParameters(command=gateway[0], args=gateway[1:]),
                PREFIX,
            ),
        )

    def _any(self, transport: str, scenario: str) -> bool:
        return any(
            self.settings.wants(f"{transport}/{era}/{scenario}") for era in self.settings.eras
        )

    async def _era(self, transport: str, era: str, pairs: dict[int, Pair]) -> None:
        s = self.settings
        small = pairs[SMALL]
        sequential = [
            ("echo sequential", self._calls(*ECHO, s.calls)),
            ("256 KiB result", self._calls(*BIG, s.big_calls)),
            ("tools/list 3", self._lists(s.list_calls, SMALL)),
        ]
        if any(self.settings.wants(f"{transport}/{era}/{name}") for name, _ in sequential):
            async with self._open(small, era, 1) as clients:
                for name, measure in sequential:
                    await self._latency(transport, era, name, clients, measure)
        if transport == "http":
            for sessions in (4, 16):
                await self._throughput(transport, era, small, sessions)
        if self.settings.wants(f"{transport}/{era}/tools/list 100") and LARGE in pairs:
            async with self._open(pairs[LARGE], era, 1) as clients:
                measure = self._lists(s.list_large_calls, LARGE)
                await self._latency(transport, era, "tools/list 100", clients, measure)

    @contextlib.asynccontextmanager
    async def _open(
        self, pair: Pair, era: str, sessions: int
    ) -> AsyncIterator[dict[str, list[tuple[Client, Target]]]]:
        async with contextlib.AsyncExitStack() as stack:
            opened: dict[str, list[tuple[Client, Target]]] = {"direct": [], "gateway": []}
            capable = self.settings.capable
            for target in (pair.direct, pair.gateway):
                for _ in range(sessions):
                    opened[target.label].append(
                        await stack.enter_async_context(connect(target, era, capable=capable))
                    )
            for client, target in [*opened["direct"], *opened["gateway"]]:
                await call_latencies(client, target.tool(ECHO[0]), ECHO[1], self.settings.warmup)
            yield opened

    def _calls(self, tool: str, args: dict[str, Any], calls: int) -> Measure:
        async def measure(client: Client, target: Target) -> dict[str, float]:
            return quantiles(await call_latencies(client, target.tool(tool), args, calls))

        return measure

    def _lists(self, calls: int, expect: int) -> Measure:
        async def measure(client: Client, target: Target) -> dict[str, float]:
            return quantiles(await list_latencies(client, calls, expect))

        return measure

    async def _latency(
        self,
        transport: str,
        era: str,
        name: str,
        clients: dict[str, list[tuple[Client, Target]]],
        measure: Measure,
    ) -> None:
        row = Row(transport, era, name, "latency")
        if not self.settings.wants(row.key):
            return
        probes = {label: CpuProbe(pair[0][1].pids) for label, pair in clients.items()}
        for _ in range(self.settings.rounds):
            for label, results in (("direct", row.direct), ("gateway", row.gateway)):
                client, target = clients[label][0]
                probes[label].start()
                results.append(await measure(client, target))
                probes[label].stop(self.settings.calls)
        row.ratio = _median_ratio(row, "p50")
        self._add(row)
        if name == "echo sequential":
            self._add_cpu(transport, era, probes)

    def _add_cpu(self, transport: str, era: str, probes: dict[str, CpuProbe]) -> None:
        direct, gateway = probes["direct"].per_call_us(), probes["gateway"].per_call_us()
        row = Row(transport, era, "CPU per echo call", "cpu")
        row.cpu = {
            "direct_server_us": direct.get("server", 0.0),
            "gateway_us": gateway.get("server", 0.0),
            "gateway_upstream_us": gateway.get("upstream", 0.0),
        }
        upstream = row.cpu["gateway_upstream_us"]
        row.ratio = row.cpu["gateway_us"] / upstream if upstream else float("nan")
        self._add(row)

    async def _throughput(self, transport: str, era: str, pair: Pair, sessions: int) -> None:
        row = Row(transport, era, f"echo x{sessions} sessions", "throughput")
        if not self.settings.wants(row.key):
            return
        tool, args = ECHO
        async with self._open(pair, era, sessions) as clients:
            for _ in range(self.settings.rounds):
                for label, results in (("direct", row.direct), ("gateway", row.gateway)):
                    sessions_ = [c for c, _ in clients[label]]
                    name = clients[label][0][1].tool(tool)
                    rate = await throughput(sessions_, name, args, self.settings.concurrent_calls)
                    results.append({"calls_per_s": rate})
        row.ratio = _median_ratio(row, "calls_per_s")
        self._add(row)

    def _add(self, row: Row) -> None:
        self.rows.append(row)
        self.note(f"  {row.key}: ratio {row.ratio:.2f}")


def _median_ratio(row: Row, stat: str) -> float:
    ratios = [g[stat] / d[stat] for d, g in zip(row.direct, row.gateway, strict=True) if d[stat]]
    return statistics.median(ratios) if ratios else float("nan")
