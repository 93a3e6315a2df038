"""``python -m bench.replicas``: two replicas on PostgreSQL vs one on the embedded default.

Three HTTP targets, measured in interleaved rounds from one client process, 2026-07-28 era:

- **direct**: the bench upstream serving streamable HTTP itself;
- **embedded**: one ``lockgate serve`` with SQLite and the in-process bus (the default);
- **replicas**: two ``lockgate serve`` processes sharing one fresh PostgreSQL schema (pending
  calls, sessions, pins, the event log and the audit chain), the sessions split between them.

- **split**: two embedded ``lockgate serve`` processes, each with its own SQLite files and
  nothing shared, the sessions split between them: what running two processes costs by itself.

Each gateway starts its own stdio upstream (``--upstream http``: all share the direct target's
streamable HTTP server instead).

Rows: calls/s of ``echo`` with 16 sessions (``--sessions``), and the time from an approver's
decision posted to replica B until the held call's result reaches the client on replica A
(p50/p90 over ``--decisions`` calls). The machine has 2 cores: two replicas cannot add CPU,
so the target is replicas >= 0.9 x embedded, and a decision-to-result p50 <= 50 ms. The
ratios replicas / split (what sharing state costs) and split / embedded (what two processes
cost, before anything is shared) tell the two costs apart.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import httpx2
import yaml
from mcp import Client

from bench.measure import quantiles, throughput
from bench.procs import (
    GATEWAY_CLI,
    REPO,
    Launch,
    free_port,
    serve,
    upstream_command,
    upstream_launch,
)

POLICY = REPO / "bench" / "policy_replicas.yaml"
DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
TOKEN = "bench-approver-token"
AUDIT = __import__("os").environ.get("NOAUDIT") is None
ECHO = ("up__echo", {"text": "hello"})


def _upstream(shared: str | None) -> dict[str, Any]:
    """The gateway's upstream: its own stdio child, or the ``shared`` streamable HTTP one."""
    if shared is not None:
        return {"name": "up", "transport": "http", "url": shared}
    command = upstream_command(3)
    return {"name": "up", "transport": "stdio", "command": command[0], "args": command[1:]}


def _config(
    directory: Path, name: str, port: int, storage: dict[str, Any] | None, shared: str | None
) -> Path:
    body: dict[str, Any] = {
        "version": 1,
        "id": "lockgate-bench",
        "listen": {"host": "127.0.0.1", "port": port},
        "servers": [_upstream(shared)],
        "policies": {"files": [str(POLICY)]},
        "approvals": {"path": str(directory / f"pending-{name}.db")},
        "events": {"audit": {"enabled": AUDIT, "path": str(directory / f"audit-{name}.db")}},
        "auth": {"approvers": [{"id": "user:bench", "token": TOKEN, "roles": ["bench"]}]},
    }
    if storage is not None:
        body["storage"] = storage
    path = directory / f"gateway-{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def _gateway(
    directory: Path, name: str, storage: dict[str, Any] | None, shared: str | None
) -> Launch:
    port = free_port()
    config = _config(directory, name, port, storage, shared)
    return Launch([*GATEWAY_CLI, "serve", "-c", str(config), "--port", str(port)], port, "/healthz")


async def _clients(
    stack: AsyncExitStack, urls: Sequence[str], sessions: int, tool: str
) -> list[Client]:
    clients = []
    for n in range(sessions):
        client = Client(urls[n % len(urls)], mode="auto", read_timeout_seconds=120)
        clients.append(await stack.enter_async_context(client))
        await clients[-1].call_tool(tool, ECHO[1])  # warm up
    return clients


async def _decision_latency(a: str, b: str, count: int) -> list[float]:
    """Milliseconds from a decision POSTed to replica ``b`` until the call held on ``a`` returns."""
    api = b.removesuffix("/mcp") + "/api/approvals"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    samples: list[float] = []
    async with (
        Client(a, mode="auto", read_timeout_seconds=120) as client,
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
    ):
        for n in range(count):
            args = {"kib": n + 1}  # a new call each time (identical calls are answered once)
            decided: dict[str, float] = {}
            async with anyio.create_task_group() as tg:
                tg.start_soon(_approve_when_held, http, api, args, decided)
                await client.call_tool("up__big", args)
                returned = time.perf_counter()
            samples.append((returned - decided["at"]) * 1000)
    return samples


async def _approve_when_held(
    http: httpx2.AsyncClient, api: str, args: dict[str, Any], decided: dict[str, float]
) -> None:
    while True:
        items = (await http.get(api)).json()["items"]
        held = [i for i in items if i["args"] == args]
        if held:
            break
        await anyio.sleep(0.01)
    response = await http.post(f"{api}/{held[0]['id']}/decision", json={"decision": "approve"})
    decided["at"] = time.perf_counter()
    response.raise_for_status()


async def _drop_schema(schema: str) -> None:
    conn = await asyncpg.connect(DSN)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


async def run(
    rounds: int, sessions: int, calls: int, decisions: int, upstream: str = "stdio"
) -> dict[str, Any]:
    """Measure every row; returns the figures (also printed)."""
    schema = f"lockgate_bench_{secrets.token_hex(4)}"
    storage = {"backend": "postgres", "dsn": DSN, "schema": schema}
    with tempfile.TemporaryDirectory() as workdir:
        directory = Path(workdir)
        direct = upstream_launch(3)
        shared = f"http://127.0.0.1:{direct.port}/mcp" if upstream == "http" else None
        launches = [direct] + [
            _gateway(directory, name, storage if name in "ab" else None, shared)
            for name in ("embedded", "a", "b", "split-a", "split-b")
        ]
        try:
            with serve(launches, directory / "servers.log") as served:
                urls = [s.url for s in served]
                targets = {
                    "direct": urls[:1],
                    "embedded": urls[1:2],
                    "replicas": urls[2:4],
                    "split": urls[4:6],
                }
                rates = await _rounds(targets, rounds, sessions, calls)
                latency = await _decision_latency(urls[2], urls[3], decisions)
        finally:
            await _drop_schema(schema)
    return _summary(rates, latency)


async def _rounds(
    targets: dict[str, list[str]], rounds: int, sessions: int, calls: int
) -> dict[str, list[float]]:
    """Calls/s of each target in each round (the targets interleaved within a round)."""
    rates: dict[str, list[float]] = {label: [] for label in targets}
    async with AsyncExitStack() as stack:
        pools = {
            k: await _clients(stack, v, sessions, "echo" if k == "direct" else ECHO[0])
            for k, v in targets.items()
        }
        for _ in range(rounds):
            for label, clients in pools.items():
                tool = "echo" if label == "direct" else ECHO[0]
                rates[label].append(await throughput(clients, tool, ECHO[1], calls))
    return rates


def _summary(rates: dict[str, list[float]], latency: list[float]) -> dict[str, Any]:
    medians = {label: statistics.median(values) for label, values in rates.items()}

    def ratio(label: str, base: str = "embedded") -> float:
        return statistics.median(r / e for r, e in zip(rates[label], rates[base], strict=True))

    return {
        "calls_per_s": medians,
        "vs_direct": {k: v / medians["direct"] for k, v in medians.items()},
        "replicas_vs_embedded": ratio("replicas"),
        "split_vs_embedded": ratio("split"),
        "replicas_vs_split": ratio("replicas", "split"),
        "decision_to_result_ms": quantiles(latency),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--calls", type=int, default=1600, help="calls per round and target")
    parser.add_argument("--decisions", type=int, default=30)
    parser.add_argument(
        "--upstream",
        choices=("stdio", "http"),
        default="stdio",
        help="each gateway's own stdio upstream, or one streamable HTTP upstream they share",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures = anyio.run(run, args.rounds, args.sessions, args.calls, args.decisions, args.upstream)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    medians = figures["calls_per_s"]
    print("| target | calls/s (16 sessions) | x direct |\n|---|---|---|")
    for label, rate in medians.items():
        print(f"| {label} | {rate:.0f} | {figures['vs_direct'][label]:.2f} |")
    print(
        f"\nreplicas / embedded (median of per-round ratios): {figures['replicas_vs_embedded']:.2f}"
        f"\nsplit / embedded (two embedded gateways, nothing shared): "
        f"{figures['split_vs_embedded']:.2f}"
        f"\nreplicas / split (what sharing state costs): {figures['replicas_vs_split']:.2f}"
    )
    latency = figures["decision_to_result_ms"]
    print(f"decision on B -> result on A: p50 {latency['p50']:.1f} ms, p90 {latency['p90']:.1f} ms")


if __name__ == "__main__":
    main()
