"""Tracing overhead: what OpenTelemetry tracing, exporting every span (100 % sampling) over
OTLP/HTTP to a local collector, adds to an echo call, against the same gateway with tracing off.

Run: ``python bench/tracing.py [--calls N] [--rounds R] [--eras legacy modern]
[--transports http stdio]`` (prints a Markdown table).

Two gateways with the bench config (bench policy, SQLite approvals, audit log, the bench
upstream over stdio): **off** has no ``telemetry`` section, **on** exports every span to
``bench/otlp_sink.py`` (a process of its own, like a collector), and **control** is a second
gateway exactly like off: what it differs from off by is the noise of this run (an A/A pair).
Over HTTP they are ``lockgate serve``; over stdio the client spawns ``lockgate stdio``. Rounds
are interleaved (off, on, control, off, on, control, ...) on one open session each; "added" is
the median over rounds of on/off - 1 of the round's p50 (target: at most 10 %), "noise" the
same of control/off - 1 (tracing off, the gateway runs no tracing code but ``telemetry is
None`` checks, so off is the gateway without tracing; this says how far apart two such
gateways measure in this run). "spans" is what the sink received, so a run that
exported nothing cannot pass for a cheap one. "gateway CPU/call" is the gateway process's user +
system CPU per measured call (the export thread's included): steadier than wall time on a busy
machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio
import yaml
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import ERAS, CpuProbe, Target, call_latencies, connect, quantiles
from bench.procs import GATEWAY_CLI, PREFIX, REPO, Launch, free_port, serve, write_config

SINK = REPO / "bench" / "otlp_sink.py"
TARGET = 0.10
"""Tracing on may add at most this share to the p50 of an echo call."""
ECHO = {"text": "hello, gateway"}
KINDS = ("off", "on", "control")
"""The gateways, in the order each round measures them (control: a second off)."""
TOOLS = 3


def _config(directory: Path, name: str, port: int, sink: str | None) -> Path:
    """The bench config (``write_config``), with every span exported to ``sink`` if given."""
    body: dict[str, Any] = yaml.safe_load(write_config(directory, TOOLS, port=port).read_text())
    body["startup_wait"] = 60  # a loaded machine may take seconds to start the upstream
    if sink is not None:
        body["telemetry"] = {"endpoint": sink, "sampling": {"sampler": "always_on"}}
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def _launch(config: Path, port: int) -> Launch:
    return Launch([*GATEWAY_CLI, "serve", "-c", str(config), "--port", str(port)], port, "/healthz")


@contextlib.contextmanager
def _targets(directory: Path, transport: str) -> Any:
    """The sink's URL and the ``off`` and ``on`` gateways as `Target`s (HTTP ones serving)."""
    sink_port, ports = free_port(), {name: free_port() for name in KINDS}
    sink = f"http://127.0.0.1:{sink_port}"
    configs = {
        name: _config(directory, f"{transport}-{name}", port, sink if name == "on" else None)
        for name, port in ports.items()
    }
    launches = [Launch([sys.executable, str(SINK), "--port", str(sink_port)], sink_port, "/count")]
    if transport == "http":
        launches += [_launch(configs[name], ports[name]) for name in KINDS]
    with serve(launches, directory / "processes.log") as served:
        if transport == "http":
            gateways = dict(zip(KINDS, served[1:], strict=True))
            yield (
                sink,
                {
                    name: Target("gateway", "http", gw.url, PREFIX, {"server": gw.pid})
                    for name, gw in gateways.items()
                },
            )
            return
        yield (
            sink,
            {
                name: Target("gateway", "stdio", _stdio(config), PREFIX)
                for name, config in configs.items()
            },
        )


def _stdio(config: Path) -> StdioServerParameters:
    command = [*GATEWAY_CLI, "stdio", "-c", str(config)]
    return StdioServerParameters(command=command[0], args=command[1:])


def _spans(sink: str) -> int:
    with urllib.request.urlopen(f"{sink}/count", timeout=10) as answer:
        return int(answer.read())


@contextlib.asynccontextmanager
async def _clients(
    targets: dict[str, Target], era: str
) -> AsyncIterator[dict[str, tuple[Client, Target]]]:
    """A session on each target (a stdio target comes back with its gateway's pid)."""
    async with contextlib.AsyncExitStack() as stack:
        yield {
            name: await stack.enter_async_context(connect(target, era))
            for name, target in targets.items()
        }


async def measure(transport: str, era: str, calls: int, rounds: int) -> dict[str, Any]:
    """One row: per-round p50 (µs) off and on, the median added share, spans exported."""
    p50: dict[str, list[float]] = {name: [] for name in KINDS}
    with (
        TemporaryDirectory(prefix="lockgate-bench-tracing-") as tmp,
        _targets(Path(tmp), transport) as (sink, targets),
    ):
        async with _clients(targets, era) as clients:
            tool = PREFIX + "echo"
            probes = {name: CpuProbe(target.pids) for name, (_, target) in clients.items()}
            for client, _ in clients.values():
                await call_latencies(client, tool, ECHO, max(20, calls // 10))  # warm-up
            for _ in range(rounds):
                for name in KINDS:
                    probes[name].start()
                    samples = await call_latencies(clients[name][0], tool, ECHO, calls)
                    probes[name].stop(calls)
                    p50[name].append(quantiles(samples)["p50"])
        await anyio.sleep(2)  # two export intervals: what the gateway queued reaches the sink
        spans = _spans(sink)
    return {
        "transport": transport,
        "era": era,
        "off_us": statistics.median(p50["off"]),
        "on_us": statistics.median(p50["on"]),
        "added": _median_share(p50["on"], p50["off"]),
        "noise": _median_share(p50["control"], p50["off"]),
        "spans": spans,
        "cpu": {name: probe.per_call_us().get("server", 0.0) for name, probe in probes.items()},
    }


def _median_share(measured: list[float], base: list[float]) -> float:
    """The median over rounds of measured/base - 1."""
    return statistics.median(m / b - 1 for m, b in zip(measured, base, strict=True))


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as Markdown."""
    lines = [
        "| transport | era | off p50 (µs) | on p50 (µs) | added | noise (control) "
        "| gateway CPU/call off, on (µs) | spans exported | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        mark = "✅" if row["added"] <= TARGET and row["spans"] > 0 else "❌"
        lines.append(
            f"| {row['transport']} | {row['era']} | {row['off_us']:.0f} | {row['on_us']:.0f} "
            f"| {row['added']:+.1%} | {row['noise']:+.1%} "
            f"| {row['cpu']['off']:.0f}, {row['cpu']['on']:.0f} "
            f"| {row['spans']} | <= {TARGET:.0%} {mark} |"
        )
    return "\n".join(lines)


async def main(options: argparse.Namespace) -> None:
    rows = []
    for transport in options.transports:
        for era in options.eras:
            rows.append(await measure(transport, era, options.calls, options.rounds))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--eras", nargs="+", choices=list(ERAS), default=list(ERAS))
    parser.add_argument("--transports", nargs="+", choices=["http", "stdio"], default=["http"])
    anyio.run(main, parser.parse_args())
