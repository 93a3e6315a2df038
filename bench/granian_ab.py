"""``python -m bench.granian_ab``: the same gateway served by uvicorn and by granian, interleaved.

Issue 32 asked whether granian (a Rust HTTP server) beats uvicorn + httptools for ``lockgate
serve``. Both gateways get the same config and their own stdio upstream; one client per target
and era makes sequential echo calls (p50, and the gateway process's CPU per call), then 16
sessions make concurrent calls (calls/s). Rounds alternate uvicorn, granian, uvicorn, ...
Needs ``pip install granian``; granian's embedded server (``granian.server.embed``) runs the
gateway's ASGI app in this module's ``serve`` mode, lifespan included.

Examples::

    python -m bench.granian_ab --rounds 5 --calls 300
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
from pathlib import Path

import anyio

from bench.measure import CpuProbe, Target, call_latencies, connect, quantiles, throughput
from bench.procs import GATEWAY_CLI, PREFIX, Launch, free_port, serve, write_config

ECHO = {"text": "hello, gateway"}
SERVERS = ("uvicorn", "granian")


def serve_granian(config: str, port: int) -> None:
    """Serve the gateway of ``config`` on ``port`` under granian (until killed)."""
    import uvloop
    from granian.constants import HTTPModes, Interfaces
    from granian.log import LogLevels
    from granian.server.embed import Server

    from gateway.gateway import Gateway
    from gateway.http.app import build_app

    async def main() -> None:
        app = build_app(Gateway.from_config(config))  # the app's lifespan enters the gateway
        server = Server(
            app,
            address="127.0.0.1",
            port=port,
            interface=Interfaces.ASGI,
            http=HTTPModes.http1,
            log_level=LogLevels.warning,
            backlog=2048,
        )
        await server.serve()

    uvloop.run(main())


async def _era(targets: dict[str, Target], era: str, rounds: int, calls: int) -> list[str]:
    p50: dict[str, list[float]] = {name: [] for name in SERVERS}
    cpu: dict[str, list[float]] = {name: [] for name in SERVERS}
    rates: dict[str, list[float]] = {name: [] for name in SERVERS}
    tool = PREFIX + "echo"
    async with contextlib.AsyncExitStack() as stack:
        one = {n: (await stack.enter_async_context(connect(t, era)))[0] for n, t in targets.items()}
        for client in one.values():
            await call_latencies(client, tool, ECHO, 50)
        for _ in range(rounds):
            for name, client in one.items():
                probe = CpuProbe(targets[name].pids)
                probe.start()
                p50[name].append(quantiles(await call_latencies(client, tool, ECHO, calls))["p50"])
                probe.stop(calls)
                cpu[name].append(probe.per_call_us()["server"])
        many = {
            n: [(await stack.enter_async_context(connect(t, era)))[0] for _ in range(16)]
            for n, t in targets.items()
        }
        for _ in range(rounds):
            for name, clients in many.items():
                rates[name].append(await throughput(clients, tool, ECHO, 640))
    med = statistics.median
    return [
        f"| {era} | {name} | {med(p50[name]):,.0f} | {med(cpu[name]):,.0f} "
        f"| {med(rates[name]):,.0f} |"
        for name in SERVERS
    ]


async def _run(rounds: int, calls: int) -> None:
    with tempfile.TemporaryDirectory(prefix="lockgate-granian-") as tmp:
        work = Path(tmp)
        ports = free_port(), free_port()
        configs = [write_config(work, 3, port=port) for port in ports]
        launches = [
            Launch([*GATEWAY_CLI, "serve", "-c", str(configs[0]), "--port", str(ports[0])],
                   ports[0], "/healthz"),
            Launch([sys.executable, "-m", "bench.granian_ab", "serve", str(configs[1]),
                    str(ports[1])], ports[1], "/healthz"),
        ]  # fmt: skip
        with serve(launches, work / "processes.log") as served:
            targets = {
                name: Target("gateway", "http", s.url, PREFIX, {"server": s.pid})
                for name, s in zip(SERVERS, served, strict=True)
            }
            lines = ["| era | server | echo p50 µs | gateway CPU µs per call | x16 calls/s |"]
            lines.append("|---|---|---:|---:|---:|")
            for era in ("legacy", "modern"):
                lines += await _era(targets, era, rounds, calls)
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.granian_ab", description=__doc__)
    parser.add_argument("mode", nargs="?", choices=["run", "serve"], default="run")
    parser.add_argument("args", nargs="*", help="serve: CONFIG PORT")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    options = parser.parse_args()
    if options.mode == "serve":
        serve_granian(options.args[0], int(options.args[1]))
        return
    anyio.run(_run, options.rounds, options.calls)


if __name__ == "__main__":
    main()
