"""Content inspection overhead: what three label rules and the built-in inspectors (every
detector, arguments and results, every tool) add to an echo call, and what result inspection
adds to a 256 KiB result, against the same gateway without them.

Run: ``python bench/inspectors.py [--calls N] [--big-calls N] [--rounds R] [--eras legacy
modern]`` (prints a Markdown table).

Two ``lockgate serve`` gateways with the bench config (SQLite approvals, audit log, the bench
upstream over stdio): **off** has the bench policy and no ``inspectors``; **on** has
``bench/policy_labels.yaml`` (the bench policy plus three label rules) and one built-in
inspector on ``up__*``, both directions. Rounds are interleaved (off, on, off, on, ...) on one
open session each; "added" is the median over rounds of on/off - 1 of the round's p50 (target
for echo: at most 15 %). The 256 KiB row calls ``big(kib=256)`` (scanned in full; no spans).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio
import yaml
from mcp import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import ERAS, Target, call_latencies, connect, quantiles
from bench.procs import GATEWAY_CLI, PREFIX, REPO, Launch, free_port, serve, write_config

LABEL_POLICY = REPO / "bench" / "policy_labels.yaml"
TARGET = 0.15
"""Label rules and the built-in inspectors may add at most this share to the echo p50."""
CASES: dict[str, dict[str, Any]] = {"echo": {"text": "hello, gateway"}, "big": {"kib": 256}}
TOOLS = 3
INSPECTOR = {"type": "builtin", "tools": ["up__*"], "direction": "both"}


PARTS = ("labels", "inspectors")
"""What the ``on`` gateway adds (``--on`` narrows it, to tell their costs apart)."""


def _config(directory: Path, name: str, port: int) -> Path:
    """The bench config; ``on``: the label policy and the built-in inspector (`PARTS`)."""
    if name == "on" and "labels" in PARTS:
        base = write_config(directory, TOOLS, port=port, policy=LABEL_POLICY)
    else:
        base = write_config(directory, TOOLS, port=port)
    body: dict[str, Any] = yaml.safe_load(base.read_text(encoding="utf-8"))
    if name == "on" and "inspectors" in PARTS:
        body["inspectors"] = {"builtin": INSPECTOR}
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


@contextlib.contextmanager
def _targets(directory: Path) -> Iterator[dict[str, Target]]:
    """The ``off`` and ``on`` gateways over HTTP, serving."""
    ports = {"off": free_port(), "on": free_port()}
    launches = [
        Launch(
            [*GATEWAY_CLI, "serve", "-c", str(_config(directory, name, port)), "--port", str(port)],
            port,
            "/healthz",
        )
        for name, port in ports.items()
    ]
    with serve(launches, directory / "processes.log") as served:
        yield {
            name: Target("gateway", "http", s.url, PREFIX)
            for name, s in zip(ports, served, strict=True)
        }


@contextlib.asynccontextmanager
async def _clients(targets: dict[str, Target], era: str) -> AsyncIterator[dict[str, Client]]:
    async with contextlib.AsyncExitStack() as stack:
        yield {
            name: (await stack.enter_async_context(connect(target, era)))[0]
            for name, target in targets.items()
        }


async def measure(era: str, calls: dict[str, int], rounds: int) -> list[dict[str, Any]]:
    """One row per case: per-round p50 (µs) off and on, the median added share."""
    p50: dict[str, dict[str, list[float]]] = {case: {"off": [], "on": []} for case in CASES}
    with (
        TemporaryDirectory(prefix="lockgate-bench-inspectors-") as tmp,
        _targets(Path(tmp)) as targets,
    ):
        async with _clients(targets, era) as clients:
            for case, args in CASES.items():
                for client in clients.values():  # warm-up
                    await call_latencies(client, PREFIX + case, args, max(5, calls[case] // 10))
                for _ in range(rounds):
                    for name in ("off", "on"):
                        samples = await call_latencies(
                            clients[name], PREFIX + case, args, calls[case]
                        )
                        p50[case][name].append(quantiles(samples)["p50"])
    rows = []
    for case, measured in p50.items():
        pairs = zip(measured["off"], measured["on"], strict=True)
        rows.append(
            {
                "case": case,
                "era": era,
                "off_us": statistics.median(measured["off"]),
                "on_us": statistics.median(measured["on"]),
                "added": statistics.median(on / off - 1 for off, on in pairs),
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as Markdown."""
    lines = [
        "| call | era | off p50 (µs) | on p50 (µs) | added | target |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        target = "—"
        if row["case"] == "echo":
            target = f"<= {TARGET:.0%} {'✅' if row['added'] <= TARGET else '❌'}"
        name = "echo" if row["case"] == "echo" else "big (256 KiB result)"
        lines.append(
            f"| {name} | {row['era']} | {row['off_us']:.0f} | {row['on_us']:.0f} "
            f"| {row['added']:+.1%} | {target} |"
        )
    return "\n".join(lines)


async def inspection_cpu(batches: int = 9) -> str:
    """CPU µs one call spends in the built-in inspection (arguments and result), in process,
    as a Markdown table: echo (its texts cached after the first call) and 256 KiB results, of
    ``x`` (the bench upstream's ``big``) and of prose with numbers (a different text each call,
    so every call scans it in full)."""
    from gateway.config.inspectors import InspectorConfig
    from gateway.inspectors import build_inspection
    from toolsets import CallContext, ToolDef, ToolResult

    inspection = build_inspection({"builtin": InspectorConfig.model_validate(INSPECTOR)})
    assert inspection is not None
    ctx = CallContext()
    echo, big = ToolDef(name="up__echo", server="up"), ToolDef(name="up__big", server="up")
    answer = ToolResult.text(CASES["echo"]["text"])
    rows = []
    prose = "Lorem ipsum dolor sit amet, 42 consectetur adipiscing elit. " * 4370
    cases = (("echo", 2000, ""), ("big (256 KiB of x)", 5, "x" * 256 * 1024))
    for name, calls, filler in (*cases, ("big (256 KiB of prose with numbers)", 5, prose)):
        samples = []
        for batch in range(batches):
            texts = [f"{batch}-{i} " + filler for i in range(calls)]
            started = time.process_time()
            for index in range(calls):
                if name == "echo":
                    await inspection.arguments(echo, CASES["echo"], ctx)
                    await inspection.result(echo, answer, ctx)
                else:
                    await inspection.result(big, ToolResult.text(texts[index]), ctx)
            samples.append((time.process_time() - started) / calls * 1e6)
        rows.append(f"| {name} | {statistics.median(samples):,.0f} |")
    return "\n".join(["| call | inspection CPU µs per call |", "|---|---:|", *rows])


async def main(options: argparse.Namespace) -> None:
    if options.cpu:
        print(await inspection_cpu())
        return
    global PARTS
    PARTS = tuple(options.on)
    rows = []
    calls = {"echo": options.calls, "big": options.big_calls}
    for era in options.eras:
        rows += await measure(era, calls, options.rounds)
        print(table(rows[-2:]).splitlines()[-2:], file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="sequential echo calls per round")
    parser.add_argument("--big-calls", type=int, default=30, help="256 KiB calls per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--eras", nargs="+", choices=list(ERAS), default=list(ERAS))
    parser.add_argument("--on", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--cpu", action="store_true", help="in-process inspection CPU only")
    anyio.run(main, parser.parse_args())
