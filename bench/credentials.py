"""Per-principal upstream connections benchmark: what a call pays for its caller's own
connection, and what 50 of them cost.

Run: ``python bench/credentials.py`` (prints Markdown; ``--rounds``, ``--calls``,
``--principals`` narrow it). One bench upstream (``bench/upstream.py``) serves streamable HTTP on
127.0.0.1; an in-process gateway reaches it twice, as two servers of one config:

- ``shared``: one connection for every caller, with a configured ``Authorization`` header;
- ``secret``: ``credentials.mode: secret``, each principal's own header from the vault, over one
  connection per principal.

Rows:

- **one caller, sequential**: ``echo`` through the whole call chain (``Gateway.call_tool``),
  rounds interleaved (shared, secret, shared, ...); the ratio is the median of the per-round
  secret/shared ratios of the median latency (target: at most 1.10).
- **N principals**: each opens its own connection (one call); memory per connection is the
  gateway process's RSS growth divided by N (and the upstream's, which keeps a session per
  connection); calls/s with every principal calling at once, against the shared server at the
  same concurrency.

``oauth`` mode is not measured here: its connections carry an ``httpx.Auth`` adding the access
token from the vault, the same pooled path as ``secret`` once connected.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.procs import free_port, upstream_command, wait_http
from gateway.gateway import Gateway
from toolsets import CallContext, Principal
from toolsets.errors import LockgateError

KEY_VAR = "LOCKGATE_BENCH_VAULT_KEY"
ARGS = {"text": "hello"}


def _config(directory: Path, url: str) -> Path:
    headers = {"Authorization": "Bearer shared-token"}
    shared = {"name": "shared", "transport": "http", "url": url, "headers": headers}
    credentials = {"mode": "secret", "header": "Authorization", "value": "Bearer {secret}"}
    own = {"name": "secret", "transport": "http", "url": url, "credentials": credentials}
    body = {
        "version": 1,
        "servers": [shared, own],
        "policies": {"default_effect": "allow"},
        "approvals": {"store": "memory"},
        "events": {"audit": {"enabled": False}},
        "vault": {"key": f"env:{KEY_VAR}"},
    }
    path = directory / "gateway.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


def _rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _ctx(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))


async def _latency_us(gateway: Gateway, tool: str, ctx: CallContext, calls: int) -> float:
    """Median microseconds of ``calls`` sequential calls of ``tool``."""
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await gateway.call_tool(tool, ARGS, ctx)
        samples.append((time.perf_counter() - started) * 1e6)
        assert not result.is_error, result.first_text()
    return statistics.median(samples)


async def _sequential(gateway: Gateway, rounds: int, calls: int) -> dict[str, float]:
    ctx = _ctx("agent:p0")
    for tool in ("shared__echo", "secret__echo"):  # warm both connections
        await _latency_us(gateway, tool, ctx, 20)
    shared, own, ratios = [], [], []
    for _ in range(rounds):
        a = await _latency_us(gateway, "shared__echo", ctx, calls)
        b = await _latency_us(gateway, "secret__echo", ctx, calls)
        shared.append(a)
        own.append(b)
        ratios.append(b / a)
    return {
        "shared_us": statistics.median(shared),
        "secret_us": statistics.median(own),
        "ratio": statistics.median(ratios),
    }


async def _concurrently(run: Callable[[str], Awaitable[Any]], names: list[str]) -> float:
    """Seconds to run ``run(name)`` for every one of ``names`` at once."""

    async def one(name: str) -> None:
        await run(name)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(one, name)
    return time.perf_counter() - started


async def _many(gateway: Gateway, upstream: int, principals: int, calls: int) -> dict[str, float]:
    names = [f"agent:p{i}" for i in range(1, principals + 1)]
    vault = gateway.parts.vault
    assert vault is not None
    rss, up_rss = _rss_kib(), _rss_kib(upstream)
    for name in names:
        await vault.set("secret", name, f"secret-of-{name}")
    for name in names:  # setting a secret opened its connection; a call makes sure
        await gateway.call_tool("secret__echo", ARGS, _ctx(name))
    opened = sum(1 for n in names if n in _pool(gateway).entries)
    grown, up_grown = _rss_kib() - rss, _rss_kib(upstream) - up_rss

    failed = {"shared__echo": 0, "secret__echo": 0}

    async def burst(tool: str, name: str) -> None:
        for _ in range(calls):
            try:
                result = await gateway.call_tool(tool, ARGS, _ctx(name))
            except LockgateError:  # counted: a connection lost under load, say
                failed[tool] += 1
                continue
            failed[tool] += result.is_error

    total = principals * calls
    shared = await _concurrently(lambda n: burst("shared__echo", n), names)
    own = await _concurrently(lambda n: burst("secret__echo", n), names)
    return {
        "shared_failed": failed["shared__echo"],
        "secret_failed": failed["secret__echo"],
        "opened": opened,
        "gateway_kib_per_connection": grown / principals,
        "upstream_kib_per_connection": up_grown / principals,
        "shared_calls_per_s": total / shared,
        "secret_calls_per_s": total / own,
    }


def _pool(gateway: Gateway) -> Any:
    from toolsets.upstream.per_principal import PerPrincipalToolset

    stack: list[Any] = [gateway.parts.combined]
    while stack:
        toolset = stack.pop()
        if isinstance(toolset, PerPrincipalToolset):
            return toolset
        stack.extend(getattr(toolset, "toolsets", ()))
        stack.extend(filter(None, [getattr(toolset, "wrapped", None)]))
    raise LookupError("no per-principal server in the gateway")


async def run(url: str, upstream: int, rounds: int, calls: int, principals: int) -> str:
    """Both rows against the bench upstream at ``url`` (process ``upstream``)."""
    os.environ[KEY_VAR] = base64.b64encode(os.urandom(32)).decode()
    with tempfile.TemporaryDirectory() as directory:
        async with Gateway.from_config(_config(Path(directory), url)) as gateway:
            vault = gateway.parts.vault
            assert vault is not None
            await vault.set("secret", "agent:p0", "secret-of-p0")
            one = await _sequential(gateway, rounds, calls)
            many = await _many(gateway, upstream, principals, max(calls // 5, 10))
    return _table(one, many, principals, os.getloadavg())


def _table(one: dict[str, float], many: dict[str, float], n: int, load: Any) -> str:
    verdict = "met" if one["ratio"] <= 1.10 else "not met"
    return "\n".join(
        [
            f"Load average at the end: {load[0]:.1f} (2 cores).",
            "",
            "| measure | shared header | own connection (secret) | ratio / note |",
            "|---|---|---|---|",
            f"| one caller, sequential, median µs | {one['shared_us']:.0f} | "
            f"{one['secret_us']:.0f} | {one['ratio']:.3f} (target ≤ 1.10: {verdict}) |",
            f"| {n} principals, calls/s (all at once) | {many['shared_calls_per_s']:.0f} | "
            f"{many['secret_calls_per_s']:.0f} | {int(many['opened'])} connections open; "
            f"failed calls {many['shared_failed']:.0f} shared, {many['secret_failed']:.0f} own |",
            f"| memory per connection, gateway RSS | - | "
            f"{many['gateway_kib_per_connection']:.0f} KiB | RSS growth / {n} |",
            f"| memory per connection, upstream RSS | - | "
            f"{many['upstream_kib_per_connection']:.0f} KiB | its session per connection |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--principals", type=int, default=50)
    args = parser.parse_args()
    port = free_port()
    upstream = subprocess.Popen(upstream_command(3, port), stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_http(url, upstream)
        print(anyio.run(run, url, upstream.pid, args.rounds, args.calls, args.principals))
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    main()
