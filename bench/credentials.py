"""Per-principal upstream connections benchmark: what a call pays for its caller's own
connection, and what 50 of them cost.

Run: ``python bench/credentials.py`` (prints Markdown; ``--rounds``, ``--calls``,
``--principals`` narrow it). One protected upstream (``bench/protected_upstream.py``: ``echo``
behind bearer JWT validation with the MCP SDK's resource-server support) serves streamable HTTP on
127.0.0.1; an in-process gateway (SQLite approvals, as by default) reaches it three times, as
three servers of one config, each paying the same token validation upstream:

- ``shared``: one connection for every caller, with a configured ``Authorization`` header;
- ``secret``: ``credentials.mode: secret``, each principal's own token from the vault, over one
  connection per principal;
- ``oauth``: ``credentials.mode: oauth``, each principal's grant in the vault, sealed as the
  connect flow's ``finish`` seals it (`Grant.issued`, `Vault.set` with ``mode="oauth"``), its
  access token added per request by `GrantAuth`, behind the `OAuthGuard` and the connect gate.
  The bench signs the tokens (`SigningKey`) and they live a day: nothing is refreshed, so no
  authorization server runs.

Rows:

- **one caller, sequential**: ``echo`` through the whole call chain (``Gateway.call_tool``),
  the modes interleaved call by call (shared, secret, oauth, secret, oauth, shared, ...); each
  ratio is the median of the per-round own/shared ratios of the median latency (target: at most
  1.10).
- **look-ups**: what one call of an already-connected caller pays for the connect gate's look-up
  for a held record (`ConnectGate.reissued`), for the store query that look-up was on every call
  before the gate kept an index, and for one vault read.
- **N principals**: each opens its own connections (one call each); memory per connection is the
  gateway process's RSS growth divided by N (and the upstream's, which keeps a session per
  connection); calls/s with every principal calling at once, against the shared server at the
  same concurrency.
"""

from __future__ import annotations

import argparse
import base64
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.procs import free_port, wait_http
from bench.protected_upstream import ISSUER, SigningKey
from bench.protected_upstream import KEY_VAR as JWT_KEY_VAR
from gateway.credentials.oauth_grant import Grant
from gateway.gateway import Gateway
from gateway.vault import Vault
from toolsets import CallContext, Principal
from toolsets.canonical import sha256_hex
from toolsets.errors import LockgateError

KEY_VAR = "LOCKGATE_BENCH_VAULT_KEY"
ARGS = {"text": "hello"}
MODES = ("shared", "secret", "oauth")
OWN = ("secret", "oauth")
CLIENT = "lockgate-bench"
TOKEN_LIFETIME = 86400.0
"""Seconds the bench's access tokens live: far beyond a run, so none is refreshed."""
PROTECTED = Path(__file__).resolve().parent / "protected_upstream.py"


@dataclass(frozen=True)
class Upstream:
    """The running protected upstream: its MCP URL, its process, the key it trusts."""

    url: str
    pid: int
    key: SigningKey


def _config(directory: Path, url: str, shared_token: str) -> Path:
    headers = {"Authorization": f"Bearer {shared_token}"}
    shared = {"name": "shared", "transport": "http", "url": url, "headers": headers}
    credentials = {"mode": "secret", "header": "Authorization", "value": "Bearer {secret}"}
    own = {"name": "secret", "transport": "http", "url": url, "credentials": credentials}
    oauth = {"mode": "oauth", "client": {"id": CLIENT}}
    granted = {"name": "oauth", "transport": "http", "url": url, "credentials": oauth}
    body = {
        "version": 1,
        "servers": [shared, own, granted],
        "policies": {"default_effect": "allow"},
        "approvals": {"store": "sqlite", "path": str(directory / "pending.db")},
        "events": {"audit": {"enabled": False}},
        "vault": {"key": f"env:{KEY_VAR}"},
    }
    path = directory / "gateway.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return path


async def _connect(vault: Vault, mode: str, name: str, key: SigningKey, url: str) -> None:
    """Give ``name`` its own ``mode`` connection: a token as its ``secret``, or an ``oauth``
    grant sealed as `gateway.credentials.oauth_connect.Connects.finish` seals one."""
    access = key.mint(name, url, lifetime=TOKEN_LIFETIME)
    if mode == "secret":
        await vault.set("secret", name, access)
        return
    token = OAuthToken(
        access_token=access,
        expires_in=int(TOKEN_LIFETIME),
        scope="echo",
        refresh_token=f"refresh-of-{name}",  # never used: no refresh within a run
    )
    grant = Grant.issued(
        token,
        client=OAuthClientInformationFull(client_id=CLIENT),
        issuer=ISSUER,
        token_endpoint=f"{ISSUER}/token",
        resource=url,
    )
    await vault.set("oauth", name, grant.dump(), mode="oauth", details=grant.public())


def _rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _ctx(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))


async def _round(gateway: Gateway, ctx: CallContext, calls: int) -> dict[str, float]:
    """Median microseconds of ``calls`` sequential calls of each mode's ``echo``, the modes
    taking turns call by call (the first one rotating), so that a burst of load elsewhere falls
    on all of them alike."""
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    for index in range(calls):
        for mode in MODES[index % 3 :] + MODES[: index % 3]:
            started = time.perf_counter()
            result = await gateway.call_tool(f"{mode}__echo", ARGS, ctx)
            samples[mode].append((time.perf_counter() - started) * 1e6)
            assert not result.is_error, result.first_text()
    return {mode: statistics.median(found) for mode, found in samples.items()}


async def _sequential(gateway: Gateway, rounds: int, calls: int) -> dict[str, float]:
    ctx = _ctx("agent:p0")
    await _round(gateway, ctx, 20)  # warm every connection
    medians: dict[str, list[float]] = {mode: [] for mode in MODES}
    ratios: dict[str, list[float]] = {mode: [] for mode in OWN}
    for _ in range(rounds):
        measured = await _round(gateway, ctx, calls)
        for mode in MODES:
            medians[mode].append(measured[mode])
        for mode in OWN:
            ratios[mode].append(measured[mode] / measured["shared"])
    found = {f"{mode}_us": statistics.median(medians[mode]) for mode in MODES}
    return found | {f"{mode}_ratio": statistics.median(ratios[mode]) for mode in OWN}


async def _lookups_us(gateway: Gateway, calls: int) -> dict[str, float]:
    """Median microseconds of what an already-connected caller's call looks up besides the
    upstream: the connect gate's look-up for a held record (`ConnectGate.reissued`), the store
    query it made on every call before it kept an index (`PendingStore.find_reusable`), and one
    vault read (a ``secret`` call reads it once, an ``oauth`` call twice: guard and pool). Each
    is timed right after a call, as a call makes it (a thread left idle wakes slower)."""
    pool, ctx = _pool(gateway, "secret"), _ctx("agent:p0")
    gate, vault = pool.connect, gateway.parts.vault
    assert gate is not None, "the secret server has no connect gate"
    assert vault is not None, "the gateway has no vault"
    tool = next(iter((await pool.get_tools(ctx)).values()))
    store, digest = gate.store, sha256_hex(ARGS)
    steps: dict[str, Callable[[], Awaitable[object]]] = {
        "gate_us": lambda: gate.reissued("secret", tool, ARGS, ctx),
        "store_us": lambda: store.find_reusable(
            ctx.principal.id, tool.name, digest, kind="connect"
        ),
        "vault_us": lambda: vault.secret("secret", ctx.principal.id),
    }
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(calls):
        for name, step in steps.items():
            await gateway.call_tool("shared__echo", ARGS, ctx)
            started = time.perf_counter()
            await step()
            samples[name].append((time.perf_counter() - started) * 1e6)
    return {name: statistics.median(found) for name, found in samples.items()}


async def _concurrently(run: Callable[[str], Awaitable[Any]], names: list[str]) -> float:
    """Seconds to run ``run(name)`` for every one of ``names`` at once."""

    async def one(name: str) -> None:
        await run(name)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(one, name)
    return time.perf_counter() - started


async def _opened(
    gateway: Gateway, mode: str, names: list[str], upstream: Upstream
) -> dict[str, float]:
    """Every one of ``names`` connects ``mode`` (which opens their connection) and calls once:
    how many connections are open, and what they grew the two processes by."""
    vault = gateway.parts.vault
    assert vault is not None
    rss, up_rss = _rss_kib(), _rss_kib(upstream.pid)
    for name in names:
        await _connect(vault, mode, name, upstream.key, upstream.url)
    for name in names:  # connecting opened the connection; a call makes sure
        result = await gateway.call_tool(f"{mode}__echo", ARGS, _ctx(name))
        assert not result.is_error, result.first_text()
    n = len(names)
    return {
        f"{mode}_opened": sum(1 for name in names if name in _pool(gateway, mode).entries),
        f"{mode}_gateway_kib": (_rss_kib() - rss) / n,
        f"{mode}_upstream_kib": (_rss_kib(upstream.pid) - up_rss) / n,
    }


async def _many(
    gateway: Gateway, upstream: Upstream, principals: int, calls: int
) -> dict[str, float]:
    names = [f"agent:p{i}" for i in range(1, principals + 1)]
    found: dict[str, float] = {}
    for mode in OWN:
        found |= await _opened(gateway, mode, names, upstream)
    failed = dict.fromkeys(MODES, 0)

    async def burst(mode: str, name: str) -> None:
        for _ in range(calls):
            try:
                result = await gateway.call_tool(f"{mode}__echo", ARGS, _ctx(name))
            except LockgateError:  # counted: a connection lost under load, say
                failed[mode] += 1
                continue
            failed[mode] += result.is_error

    for mode in MODES:
        seconds = await _concurrently(functools.partial(burst, mode), names)
        found[f"{mode}_calls_per_s"] = principals * calls / seconds
        found[f"{mode}_failed"] = failed[mode]
    return found


def _pool(gateway: Gateway, name: str) -> Any:
    """The per-principal pool of server ``name``."""
    from toolsets.upstream.per_principal import PerPrincipalToolset

    stack: list[Any] = [gateway.parts.combined]
    while stack:
        toolset = stack.pop()
        if isinstance(toolset, PerPrincipalToolset) and toolset.name == name:
            return toolset
        stack.extend(getattr(toolset, "toolsets", ()))
        stack.extend(filter(None, [getattr(toolset, "wrapped", None)]))
    raise LookupError(f"no per-principal server {name!r} in the gateway")


async def run(upstream: Upstream, rounds: int, calls: int, principals: int) -> str:
    """Every row against the protected ``upstream``."""
    os.environ[KEY_VAR] = base64.b64encode(os.urandom(32)).decode()
    url, key = upstream.url, upstream.key
    shared_token = key.mint("shared", url, lifetime=TOKEN_LIFETIME)
    with tempfile.TemporaryDirectory() as directory:
        async with Gateway.from_config(_config(Path(directory), url, shared_token)) as gateway:
            vault = gateway.parts.vault
            assert vault is not None
            for mode in OWN:
                await _connect(vault, mode, "agent:p0", key, url)
            one = await _sequential(gateway, rounds, calls)
            one |= await _lookups_us(gateway, calls)
            many = await _many(gateway, upstream, principals, max(calls // 5, 10))
    return _table(one, many, principals, os.getloadavg())


def _verdict(ratio: float) -> str:
    return f"{ratio:.3f} ({'met' if ratio <= 1.10 else 'not met'})"


def _table(one: dict[str, float], many: dict[str, float], n: int, load: Any) -> str:
    def row(measure: str, cells: list[str], note: str) -> str:
        return f"| {measure} | {' | '.join(cells)} | {note} |"

    kib = [f"{many[f'{m}_gateway_kib']:.0f} KiB" for m in OWN]
    up_kib = [f"{many[f'{m}_upstream_kib']:.0f} KiB" for m in OWN]
    rates = [f"{many[f'{m}_calls_per_s']:.0f}" for m in MODES]
    failed = ", ".join(f"{m} {many[f'{m}_failed']:.0f}" for m in MODES)
    opened = ", ".join(f"{m} {many[f'{m}_opened']:.0f}" for m in OWN)
    store_share = one["store_us"] / one["secret_us"]
    return "\n".join(
        [
            f"Load average at the end: {load[0]:.1f} (2 cores).",
            "",
            "| measure | shared header | own (secret) | own (oauth) | ratio / note |",
            "|---|---|---|---|---|",
            row(
                "one caller, sequential, median µs",
                [f"{one[f'{m}_us']:.0f}" for m in MODES],
                f"own/shared (target ≤ 1.10): secret {_verdict(one['secret_ratio'])}, "
                f"oauth {_verdict(one['oauth_ratio'])}",
            ),
            row(
                "connect gate look-up per call, median µs",
                ["-", f"{one['gate_us']:.1f}", "same"],
                f"the store query it replaces: {one['store_us']:.0f} µs "
                f"({store_share:.1%} of a secret call)",
            ),
            row(
                "vault read, median µs",
                ["-", f"{one['vault_us']:.0f} (1 per call)", "2 per call"],
                "the caller's credential, read on every call",
            ),
            row(
                f"{n} principals, calls/s (all at once)",
                rates,
                f"connections open: {opened}; failed calls: {failed}",
            ),
            row("memory per connection, gateway RSS", ["-", *kib], f"RSS growth / {n}"),
            row("memory per connection, upstream RSS", ["-", *up_kib], "its session each"),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--principals", type=int, default=50)
    args = parser.parse_args()
    port, key = free_port(), SigningKey()
    command = [sys.executable, str(PROTECTED), "--http", str(port)]
    env = {**os.environ, JWT_KEY_VAR: key.public_pem}
    upstream = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_http(url, upstream)
        served = Upstream(url, upstream.pid, key)
        print(anyio.run(run, served, args.rounds, args.calls, args.principals))
    finally:
        upstream.terminate()
        upstream.wait(10)


if __name__ == "__main__":
    main()
