"""Rate-limit step benchmark: what one call pays for the step, in process, on one core.

Run: ``python bench/rate_limits.py`` (prints a Markdown table; add ``--postgres DSN`` to measure
the shared counter too, e.g. ``postgresql://postgres@127.0.0.1:5432/postgres``). The chain is
the gateway's policy step, the rate-limit step and a tool answering at once:

- ``no limit``: the rule has no limit (the step only reads the decision);
- ``limit``: ``limit: {rate: 1000000/s, per: [principal, tool]}`` (never reached: every call is
  counted and let through), in memory;
- ``shadow rule, limit``: the same limit on a ``mode: shadow`` rule (counted, never refusing),
  compared with the shadow rule without it (shadow rules cost the engine a little of their own);
- ``limit, PostgreSQL``: the shared counter, one statement per call (wall time: a round trip).

CPU microseconds per call are medians over batches (``time.process_time``, steady under a
loaded machine), except PostgreSQL (``time.perf_counter``). Compare them with a direct call of
the bench upstream (``python -m bench``: about 1,000-2,500 µs) for the ratio the step adds.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import yaml

from gateway.approvals.refusals import Refusals
from gateway.events import BusObserver, EventBus
from gateway.events.recorder import Recorder
from gateway.memory.rate_counter import MemoryRateCounter
from gateway.memory.sessions import MemorySessionStore
from gateway.sessions.book import SessionBook
from policies import PolicyDecider, PolicyHolder
from toolsets import CallContext, ExternalToolset, Principal, ToolDef, ToolResult
from toolsets.policy import PolicyToolset
from toolsets.rate_limited import RateLimitedToolset
from toolsets.rates import RateCounter

CALLS = 2_000
BATCHES = 15
TOOL = ToolDef(name="files__read", server="files", upstream_name="read")
ARGS = {"path": "/srv/data/report.csv", "limit": 100}
CTX = CallContext(principal=Principal(id="agent:bench"), session_id="s1")
LIMIT = {"rate": "1000000/s", "per": ["principal", "tool"]}
RULE: dict[str, Any] = {"id": "reads", "tools": ["files__*"], "effect": "allow"}
SHADOW = {**RULE, "mode": "shadow"}
RULES: dict[str, tuple[dict[str, Any], str]] = {
    "no limit": (RULE, "no limit"),
    "limit": ({**RULE, "limit": LIMIT}, "no limit"),
    "shadow rule, no limit": (SHADOW, "shadow rule, no limit"),
    "shadow rule, limit": ({**SHADOW, "limit": LIMIT}, "shadow rule, no limit"),
}
"""Each chain's rule, and the chain it is compared with (same rule without the limit)."""


async def _answer(tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    return ToolResult.text("ok")


def _chain(directory: Path, rule: dict[str, Any], counter: RateCounter) -> PolicyToolset:
    policy = directory / f"{secrets.token_hex(4)}.yaml"
    body = {"version": 1, "defaults": {"effect": "allow"}, "rules": [rule]}
    policy.write_text(yaml.safe_dump(body), encoding="utf-8")  # one file per chain
    bus = EventBus("urn:lockgate:bench")
    decider = PolicyDecider(PolicyHolder.load([policy]), SessionBook(MemorySessionStore()))
    step = RateLimitedToolset(ExternalToolset([TOOL], _answer), counter, BusObserver(bus))
    return PolicyToolset(step, decider, Refusals(Recorder(bus, None).record))


async def per_call_us(chain: PolicyToolset, clock: Callable[[], float]) -> float:
    """Median microseconds per call over `BATCHES` batches of `CALLS` calls."""
    batches = []
    for _ in range(BATCHES):
        started = clock()
        for _ in range(CALLS):
            await chain.call_tool(TOOL.name, ARGS, CTX, TOOL)
        batches.append((clock() - started) / CALLS * 1e6)
    return statistics.median(batches)


async def _postgres(directory: Path, dsn: str) -> float:
    from gateway.postgres.database import Database
    from gateway.postgres.rate import PostgresRateCounter
    from gateway.postgres.settings import PostgresSettings

    schema = f"lockgate_bench_{secrets.token_hex(4)}"
    database = Database(PostgresSettings(dsn=dsn, schema=schema))
    try:
        chain = _chain(directory, RULES["limit"][0], PostgresRateCounter(database))
        await per_call_us(chain, time.perf_counter)  # warm up: migrate, open the pool
        return await per_call_us(chain, time.perf_counter)
    finally:
        conn = await database.connect()
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()
        await database.close()


async def main(dsn: str | None) -> None:
    measured: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (rule, _) in RULES.items():
            chain = _chain(Path(tmp), rule, MemoryRateCounter())
            await per_call_us(chain, time.process_time)  # warm up
            measured[name] = await per_call_us(chain, time.process_time)
        if dsn is not None:
            measured["limit, PostgreSQL"] = await _postgres(Path(tmp), dsn)
    print("| chain | µs per call | added by the limit |")
    print("|---|---:|---:|")
    for name, us in measured.items():
        base = measured[RULES[name][1] if name in RULES else "no limit"]
        print(f"| {name} | {us:.1f} | {us - base:+.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", metavar="DSN", help="also measure the shared counter")
    anyio.run(main, parser.parse_args().postgres)
