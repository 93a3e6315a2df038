"""Results out: the Markdown table (with targets), ``results.json`` and ``RESULTS.md``."""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
import platform
import statistics
import subprocess
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from bench.procs import REPO
from bench.runner import Row, Settings

Measure = Literal["ratio", "added_us", "gateway_us"]
TARGETS: list[tuple[str, str, float, Measure]] = [
    ("*/*/echo sequential", "<=", 500, "added_us"),
    ("*/*/CPU per echo call", "<=", 600, "gateway_us"),
    ("*/*/echo x16 sessions", ">=", 1.0, "ratio"),
    ("*/*/256 KiB result", "<=", 1.3, "ratio"),
    ("*/*/tools/list 3", "<=", 1.1, "ratio"),
    ("*/*/tools/list 100", "<=", 1.1, "ratio"),
]
"""Issue 32's targets: pattern on ``transport/era/scenario``, comparison, bound, and what is
compared: the ratio column, the p50 the gateway adds to a sequential call (``added_us``: median
over rounds of gateway p50 - direct p50, µs), or the gateway process's CPU per call
(``gateway_us``). The first matching pattern applies."""
NOTES_MARKER = "<!-- notes: kept across runs -->"
_SHOWN: dict[str, str] = {"ratio": "ratio", "added_us": "added p50 µs", "gateway_us": "CPU µs"}


def target_of(row: Row) -> tuple[str, float, Measure] | None:
    """The target applying to ``row``, if any: comparison, bound, what is compared."""
    for pattern, op, bound, measure in TARGETS:
        if fnmatch.fnmatch(row.key, pattern):
            return op, bound, measure
    return None


def measured(row: Row, measure: Measure) -> float:
    """The value of ``row`` a target of ``measure`` compares."""
    if measure == "added_us":
        added = [g["p50"] - d["p50"] for d, g in zip(row.direct, row.gateway, strict=True)]
        return statistics.median(added) if added else float("nan")
    if measure == "gateway_us":
        return row.cpu.get("gateway_us", float("nan"))
    return row.ratio


def met(row: Row) -> bool | None:
    """Whether ``row`` meets its target (None when it has none)."""
    target = target_of(row)
    if target is None:
        return None
    op, bound, measure = target
    value = measured(row, measure)
    return value <= bound if op == "<=" else value >= bound


def _verdict(row: Row) -> str:
    target = target_of(row)
    if target is None:
        return ""
    op, bound, measure = target
    shown = "" if measure == "ratio" else f"{_SHOWN[measure]} {measured(row, measure):,.0f} "
    return f"{shown}{op} {bound:g} " + ("✅" if met(row) else "❌")


def _median(rounds: list[dict[str, float]], stat: str) -> float:
    return statistics.median(r[stat] for r in rounds) if rounds else float("nan")


def _cells(row: Row) -> tuple[str, str]:
    if row.metric == "cpu":
        c = row.cpu
        gateway = f"{c['gateway_us']:,.0f} (its upstream {c['gateway_upstream_us']:,.0f})"
        return f"{c['direct_server_us']:,.0f}", gateway
    if row.metric == "throughput":
        return _rate(row.direct), _rate(row.gateway)
    return _spread(row.direct), _spread(row.gateway)


def _rate(rounds: list[dict[str, float]]) -> str:
    return f"{_median(rounds, 'calls_per_s'):,.0f}"


def _spread(rounds: list[dict[str, float]]) -> str:
    return " / ".join(f"{_median(rounds, q):,.0f}" for q in ("p50", "p90", "p99"))


UNITS = {"latency": "µs p50 / p90 / p99", "throughput": "calls/s", "cpu": "CPU µs per call"}
RATIO = {"latency": "p50", "throughput": "calls/s", "cpu": "gateway / its upstream"}


def table(rows: list[Row]) -> str:
    """The Markdown table: medians over rounds, and the median per-round ratio."""
    lines = [
        "| transport | era | scenario | unit | direct | gateway | ratio | target |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        direct, gateway = _cells(row)
        lines.append(
            f"| {row.transport} | {row.era} | {row.scenario} | {UNITS[row.metric]} | {direct} "
            f"| {gateway} | {row.ratio:.2f} ({RATIO[row.metric]}) | {_verdict(row)} |"
        )
    return "\n".join(lines)


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], check=False, cwd=REPO, capture_output=True, text=True, timeout=10
        )
    except OSError:
        return ""
    return out.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment() -> dict[str, Any]:
    """Date, versions and machine, for the report."""
    dirty = " (dirty tree)" if _git("status", "--porcelain", "--untracked-files=no") else ""
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "mcp": metadata.version("mcp"),
        "lockgate": metadata.version("lockgate"),
        "commit": _git("rev-parse", "--short", "HEAD") + dirty,
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def to_json(rows: list[Row], settings: Settings, env: dict[str, Any]) -> dict[str, Any]:
    """Everything measured, per round, plus medians, ratios and target verdicts."""
    out = []
    for row in rows:
        item = asdict(row) | {"key": row.key, "met": met(row)}
        target = target_of(row)
        if target is None:
            item["target"] = None
        else:
            op, bound, measure = target
            value = measured(row, measure)
            item["target"] = {"op": op, "bound": bound, "measure": measure, "value": value}
        out.append(item)
    return {"environment": env, "settings": asdict(settings), "rows": out}


def header(env: dict[str, Any], settings: Settings) -> str:
    """Date, versions, machine and settings in a few lines of Markdown."""
    return (
        f"Run {env['date']} on commit {env['commit']}: Python {env['python']}, mcp {env['mcp']}, "
        f"lockgate {env['lockgate']}; {env['nproc']} cores, {env['cpu']}; "
        f"load average at the end {env['loadavg']}.\n"
        f"{settings.rounds} interleaved rounds; per round {settings.calls} sequential calls, "
        f"{settings.concurrent_calls} concurrent calls, {settings.big_calls} big results, "
        f"{settings.list_calls} / {settings.list_large_calls} listings (3 / 100 tools)."
    )


def write(rows: list[Row], settings: Settings, out: Path, methodology: str) -> tuple[Path, Path]:
    """Write ``results.json`` and ``RESULTS.md`` into ``out``; hand-written notes are kept."""
    env = environment()
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "RESULTS.md"
    json_path.write_text(json.dumps(to_json(rows, settings, env), indent=2) + "\n")
    notes = ""
    if md_path.exists() and NOTES_MARKER in (old := md_path.read_text()):
        notes = old.split(NOTES_MARKER, 1)[1]
    body = (
        f"# lockgate benchmark results\n\n{header(env, settings)}\n\n{table(rows)}\n\n"
        f"{methodology}\n\n{NOTES_MARKER}{notes or chr(10)}"
    )
    md_path.write_text(body)
    return json_path, md_path
