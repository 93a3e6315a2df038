"""Script and hook overhead: what a sandboxed script tool or a no-op hook adds to a call.

Run with ``python bench/scripts.py [--calls N] [--rounds R]``; prints a Markdown table.

Two in-process gateways in front of the bench upstream (over stdio), each called in
interleaved rounds, one call after another:

- **direct**: ``up__echo`` through the whole chain (validation, policy, events).
- **script**: ``sc__echo_via``, a script tool whose ``run`` makes the same ``up__echo`` call as a
  sub-call (so: the script's own pass through the chain, a sandbox run, and the sub-call).
- **hooked**: ``up__echo`` on a second gateway whose no-op ``before_call`` hook selects it.

The "added" column is the median of per-round p50 differences against **direct** measured in
the same round (targets: script <= 2 ms, hook <= 0.5 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.procs import upstream_command
from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal

SCRIPT = """
def run(text: str) -> str:
    return tools.up__echo(text=text)
"""
NO_OP = """
def before_call(tool, args, ctx):
    return None
"""
CTX = CallContext(principal=Principal(id="agent:bench"), session_id="bench")
TARGETS = {"script": ("plain", "sc__echo_via"), "hooked": ("hooked", "up__echo")}


def _config(directory: Path, name: str, *, hooked: bool) -> Path:
    command = upstream_command(0)
    body: dict[str, Any] = {
        "version": 1,
        "servers": [
            {"name": "up", "transport": "stdio", "command": command[0], "args": command[1:]},
            {
                "name": "sc",
                "transport": "script",
                "scripts": [{"name": "echo_via", "source": SCRIPT}],
            },
        ],
        "approvals": {"store": "memory"},
        "events": {"audit": {"enabled": False}},
        "hooks": [{"name": "no-op", "tools": ["up__echo"], "source": NO_OP}] if hooked else [],
    }
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


async def _p50(gateway: Gateway, tool: str, calls: int) -> float:
    timings = []
    for index in range(calls):
        started = time.perf_counter()
        result = await gateway.call_tool(tool, {"text": f"t{index}"}, CTX)
        timings.append(time.perf_counter() - started)
        assert not result.is_error, result.first_text()
    return statistics.median(timings) * 1000


@contextlib.asynccontextmanager
async def _gateways(directory: Path) -> AsyncIterator[dict[str, Gateway]]:
    async with contextlib.AsyncExitStack() as stack:
        found = {}
        for name, hooked in (("plain", False), ("hooked", True)):
            gateway = Gateway.from_config(_config(directory, name, hooked=hooked))
            found[name] = await stack.enter_async_context(gateway)
            await found[name].wait_ready()
        yield found


async def main(calls: int, rounds: int) -> None:
    added: dict[str, list[float]] = {name: [] for name in TARGETS}
    direct: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with _gateways(Path(tmp)) as gateways:
            for gateway, tool in [
                (gateways["plain"], "up__echo"),
                *((gateways[g], t) for g, t in TARGETS.values()),
            ]:
                await _p50(gateway, tool, 50)  # warm-up: sessions, workers, caches
            for _ in range(rounds):
                base = await _p50(gateways["plain"], "up__echo", calls)
                direct.append(base)
                for name, (which, tool) in TARGETS.items():
                    added[name].append(await _p50(gateways[which], tool, calls) - base)
    print("| scenario | direct p50 (ms) | added p50 (ms) | target |")
    print("|---|---|---|---|")
    for name, target in (("script", 2.0), ("hooked", 0.5)):
        value = statistics.median(added[name])
        mark = "✅" if value <= target else "❌"
        label = "script tool, one sub-call" if name == "script" else "no-op before_call hook"
        print(f"| {label} | {statistics.median(direct):.2f} | {value:.2f} | <= {target} {mark} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    anyio.run(main, options.calls, options.rounds)
