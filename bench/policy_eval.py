"""Policy evaluation benchmark: decisions per second at 10, 100 and 1,000 rules, on one core.

Run with ``python bench/policy_eval.py``; prints a Markdown table.

Calls cycle over a catalogue of 64 tools (8 servers x 8 tools) with realistic arguments
(a path, a 4 KiB ``content`` and a token). Every policy holds the same 10 *deciding* rules for the
catalogue; the remaining rules are *unrelated* (other tools and servers, literal names, globs,
principal lists), so the figures show how cost grows with rules that do not apply.

- ``glob``: deciding rules use tool/server globs and principal lists only.
- ``cel``: the deciding rules add ``when``/``unless`` conditions on ``args``, ``principal``,
  ``session`` and ``tool``; unrelated rules carry CEL too.
- ``dense``: worst case, every rule targets the catalogue (half with CEL); reported for
  1,000 rules only.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from policies import PolicyEngine, SessionState
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

SIZES = (10, 100, 1000)
SERVERS = 8
TOOLS = 8
SAMPLES = 50_000
WARMUP = 5_000
PRINCIPAL = Principal(id="agent:bench", roles=frozenset({"ops", "dev"}), claims={"team": "core"})

DECIDING_GLOB: list[dict[str, Any]] = [
    {"tools": ["s*__t0", "s*__t1"], "effect": "allow"},
    {"servers": ["s3"], "effect": "allow", "redact": ["args.token"]},
    {"tools": ["s1__t2", "s2__t2"], "principals": ["role:ops"], "effect": "ask"},
    {"tools": ["*__t7"], "effect": "deny", "message": "no"},
    {"tools": ["s7__t6"], "principals": ["!role:admin"], "effect": "hide"},
    {"tools": ["s4__*"], "effect": "defer"},
    {"tools": ["s5__t3", "s5__t4"], "principals": ["agent:*"], "effect": "allow"},
    {"servers": ["s6"], "principals": ["role:dev", "!user:mallory"], "effect": "allow"},
    {"tools": ["s0__t5"], "effect": "ask"},
    {"tools": ["s2__[!t]*", "s1__t[3-5]"], "effect": "allow"},
]
CONDITIONS = [
    'has(args.path) && args.path.endsWith(".env")',
    '"ops" in principal.roles && has(args.path)',
    'has(args.path) && args.path.startsWith("/etc/")',
    'principal.claims.team == "core"',
    '"s0__t5" in session.tool_calls && session.tool_calls["s0__t5"] > 1',
    "has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint",
]


def _deciding(index: int, cel: bool) -> dict[str, Any]:
    rule = dict(DECIDING_GLOB[index])
    if cel:
        rule["when" if index % 3 else "unless"] = CONDITIONS[index % len(CONDITIONS)]
    return rule


def _unrelated(index: int, cel: bool) -> dict[str, Any]:
    shape = index % 4
    rule: dict[str, Any]
    if shape == 0:
        rule = {"tools": [f"o{index % 37}__tool{index}"], "effect": "ask"}
    elif shape == 1:
        rule = {"servers": [f"o{index}"], "effect": "deny"}
    elif shape == 2:
        rule = {"tools": [f"o{index % 37}__*_{index}"], "effect": "allow"}
    else:
        rule = {"tools": [f"p{index}__x"], "principals": ["role:ops", "!user:x"], "effect": "hide"}
    if cel and index % 2:
        rule["when"] = CONDITIONS[index % len(CONDITIONS)]
    return rule


def _dense(index: int, cel: bool) -> dict[str, Any]:
    rule = dict(DECIDING_GLOB[index % len(DECIDING_GLOB)])
    if cel and index % 2:
        rule["when"] = CONDITIONS[index % len(CONDITIONS)]
    return rule


def _rules(size: int, shape: str) -> list[dict[str, Any]]:
    if shape == "dense":
        made = [_dense(index, cel=True) for index in range(size)]
    else:
        cel = shape == "cel"
        deciding = [_deciding(i, cel) for i in range(min(size, len(DECIDING_GLOB)))]
        made = deciding + [_unrelated(i, cel) for i in range(size - len(deciding))]
    return [{"id": f"r{index}", **rule} for index, rule in enumerate(made)]


def _engine(size: int, shape: str, directory: Path) -> tuple[PolicyEngine, float]:
    path = directory / f"{shape}-{size}.yaml"
    document = {"version": 1, "defaults": {"effect": "ask"}, "rules": _rules(size, shape)}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    start = time.perf_counter()
    engine = PolicyEngine.load([path])
    return engine, (time.perf_counter() - start) * 1000


def _calls() -> list[tuple[ToolDef, dict[str, Any]]]:
    calls = []
    for server in range(SERVERS):
        for tool in range(TOOLS):
            annotations = {"destructiveHint": tool % 2 == 0}
            definition = ToolDef(
                name=f"s{server}__t{tool}",
                server=f"s{server}",
                upstream_name=f"t{tool}",
                annotations=annotations,
            )
            path = "app/.env" if (server + tool) % 2 else "docs/readme.md"
            calls.append((definition, {"path": path, "content": "x" * 4096, "token": "t"}))
    return calls


def _measure(engine: PolicyEngine) -> dict[str, float]:
    calls, session = _calls(), SessionState("bench")
    for name in ("s0__t5", "s0__t5", "s1__t1"):
        session.record(name, {"path": "a"})
    evaluate: Callable[..., Any] = engine.evaluate_call
    count, clock = len(calls), time.perf_counter_ns
    for index in range(WARMUP):
        evaluate(*calls[index % count], PRINCIPAL, session)
    timings = []
    for index in range(SAMPLES):
        tool, args = calls[index % count]
        start = clock()
        evaluate(tool, args, PRINCIPAL, session)
        timings.append(clock() - start)
    start = clock()
    for index in range(SAMPLES):
        evaluate(*calls[index % count], PRINCIPAL, session)
    elapsed = (clock() - start) / 1e9
    timings.sort()
    matched = [len(evaluate(t, a, PRINCIPAL, session).matched) for t, a in calls]
    return {
        "p50": timings[len(timings) // 2] / 1000,
        "p99": timings[int(len(timings) * 0.99)] / 1000,
        "rate": SAMPLES / elapsed,
        "matched": statistics.fmean(matched),
    }


def main() -> None:
    """Run every size and shape on one core; print a Markdown table."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print("| rules | shape | load (ms) | matched/call | p50 (µs) | p99 (µs) | decisions/s |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    runs = [(size, shape) for size in SIZES for shape in ("glob", "cel")] + [(1000, "dense")]
    with tempfile.TemporaryDirectory() as directory:
        for size, shape in runs:
            engine, load_ms = _engine(size, shape, Path(directory))
            result = _measure(engine)
            print(
                f"| {size:,} | {shape} | {load_ms:.1f} | {result['matched']:.1f} | "
                f"{result['p50']:.2f} | {result['p99']:.2f} | {result['rate']:,.0f} |"
            )


if __name__ == "__main__":
    main()
