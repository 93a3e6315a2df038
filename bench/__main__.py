"""``python -m bench``: gateway vs direct, every scenario; ``python -m bench profile``: py-spy.

Examples::

    python -m bench                       # everything, a few minutes; writes bench/out/
    python -m bench --update-results      # the same, rewriting the committed bench/RESULTS.md
    python -m bench --quick --out /tmp/b  # tiny smoke run
    python -m bench --only 'http/*/echo*' --rounds 9
    python -m bench profile --calls 3000  # where the gateway's time goes
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import anyio

from bench.measure import ERAS
from bench.procs import REPO
from bench.report import table, write
from bench.runner import QUICK, Bench, Settings

COMMITTED = REPO / "bench"
"""Where the committed ``RESULTS.md`` and ``results.json`` live (``--update-results``)."""
OUT = COMMITTED / "out"
"""Where a run writes by default: untracked (``.gitignore``)."""

METHODOLOGY = """\
## How to run it

`python -m bench` (from the repository root, in the venv; a few minutes) runs every scenario
and writes `RESULTS.md` and `results.json` into the untracked `bench/out/`; `--update-results`
rewrites this file and `bench/results.json` instead (never with `--quick`). `--quick` is the
smoke run, `--rounds`, `--calls`, `--eras legacy modern`, `--transports http stdio`,
`--only 'http/*/echo*'` narrow it, `--no-audit` turns the audit log off,
`--policy bench/policy_limited.yaml` runs the gateway with a rate limit on every allowed call,
`--out DIR` writes elsewhere. `python -m bench profile`
samples the gateway with py-spy during the sequential echo scenario and prints where the time
goes (`pip install py-spy`).

## How to read this

- **direct**: the bench upstream (`bench/upstream.py`, an `MCPServer` with `echo`, `big`, `fail`
  and, for the 100-tool rows, 97 generated tools with realistic schemas) called by an `mcp.Client`.
  Over HTTP it serves itself with uvicorn (`--http PORT`); over stdio the client spawns it.
- **gateway**: `lockgate serve -c CONFIG` (uvicorn on 127.0.0.1, client at `/mcp`) or
  `lockgate stdio -c CONFIG` (spawned by the client), whose one upstream is the same server
  **over stdio**, persistent. The config (written at run time) has the bench policy
  (`bench/policy.yaml`: plain rules, a CEL rule, a deny rule; `echo` allowed by a plain rule),
  argument validation (always on), the in-process event bus (always on) and the SQLite
  approval store. Tool names are prefixed (`up__echo`).
- Both targets are measured from the client, in the same process, with the same `mcp.Client`
  code. Eras: `mode="legacy"` (2025-11-25 sessions) and `mode="auto"` (2026-07-28).
- **Rounds are interleaved**: each scenario opens its sessions on both targets, warms them up,
  then measures direct, gateway, direct, gateway, ... The machine (2 cores) is shared, so
  absolute numbers drift with load; the **ratio** column is the median of the per-round
  gateway/direct ratios, which is what the targets are about. Other columns are medians over
  rounds.
- Latency rows: one session, calls one after another. Throughput rows: N sessions, each
  calling in a loop, calls/s over the wall time of the round. `tools/list` bypasses the
  client's response cache. The 256 KiB row calls `big(kib=256)`.
- **CPU per echo call**: utime + stime from `/proc/PID/stat` around the sequential echo rounds,
  per call. "direct" is the upstream serving the client itself (HTTP or stdio); "gateway" is the
  gateway process, and in brackets its upstream (the same server, over stdio), which the CPU
  target compares it with. The client's own CPU is on the same 2 cores in every case.
- The gateway adds a process hop: client -> gateway -> upstream, three processes on two
  cores against two. A gateway ratio of 1.0 is therefore not reachable; the targets say how
  close it must come.
- **target** (issue 32): sequential echo, the p50 the gateway adds (median over rounds of
  gateway p50 - direct p50) <= 500 µs; the gateway process's CPU per echo call <= 600 µs; 16
  sessions >= 1.0x direct calls/s; 256 KiB result <= 1.3x; `tools/list` of 3 and 100 tools
  <= 1.1x; each in both eras."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m bench``."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("mode", nargs="?", choices=["run", "profile"], default="run")
    parser.add_argument("--quick", action="store_true", help="a tiny run (the smoke test)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per scenario")
    parser.add_argument("--calls", type=int, help="sequential calls per round")
    parser.add_argument(
        "--only", help="globs on transport/era/scenario, comma-separated, e.g. 'http/*/echo*'"
    )
    parser.add_argument("--eras", nargs="+", choices=list(ERAS), help="default: both")
    parser.add_argument("--transports", nargs="+", choices=["http", "stdio"])
    parser.add_argument(
        "--no-audit", dest="audit", action="store_false", help="turn the audit log off"
    )
    parser.add_argument(
        "--policy",
        type=Path,
        help="the gateway's policy file (default bench/policy.yaml; bench/policy_limited.yaml "
        "adds a rate limit to every allowed call)",
    )
    parser.add_argument(
        "--capable",
        action="store_true",
        help="the client declares elicitation, sampling and roots (an upstream may ask it)",
    )
    parser.add_argument(
        "--out", type=Path, help=f"results directory (default {OUT.relative_to(REPO)}, untracked)"
    )
    parser.add_argument(
        "--update-results",
        action="store_true",
        help=f"rewrite the committed {COMMITTED.relative_to(REPO)}/RESULTS.md and results.json "
        "(not with --quick or --out)",
    )
    parser.add_argument("--rate", type=int, default=250, help="profile: samples per second")
    parser.add_argument("--tool", choices=["echo", "big"], default="echo", help="profile: tool")
    parser.add_argument("--gil", action="store_true", help="profile: GIL holder only (Python CPU)")
    parser.add_argument(
        "--sessions", type=int, default=1, help="profile: sessions calling at once (default 1)"
    )
    return parser


def results_dir(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Path:
    """Where the results go: ``--out``, the committed files when asked, else `OUT`."""
    if not args.update_results:
        return Path(args.out or OUT)
    if args.quick:
        parser.error("--update-results: a --quick run never replaces the committed results")
    if args.out is not None:
        parser.error("--update-results writes the committed results: leave out --out")
    return COMMITTED


def _settings(args: argparse.Namespace) -> Settings:
    settings = QUICK if args.quick else Settings()
    changes = {
        "rounds": args.rounds,
        "calls": args.calls,
        "only": args.only,
        "eras": tuple(args.eras) if args.eras else None,
        "transports": tuple(args.transports) if args.transports else None,
        "audit": args.audit,
        "policy": str(args.policy.resolve()) if args.policy else None,
        "capable": args.capable or None,
    }
    return dataclasses.replace(settings, **{k: v for k, v in changes.items() if v is not None})


async def _run(args: argparse.Namespace, out: Path) -> None:
    settings = _settings(args)
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-") as tmp:
        if args.mode == "profile":
            from bench.profiling import ProfileRun, profile

            for era in settings.eras:
                calls = args.calls or (200 if args.quick else 3000)
                run = ProfileRun(
                    era, calls, args.tool, args.rate, args.gil, settings.audit, args.sessions
                )
                print(await profile(Path(tmp), run), flush=True)
            return
        rows = await Bench(settings, Path(tmp)).run()
    json_path, md_path = write(rows, settings, out, METHODOLOGY)
    print(table(rows))
    print(f"\nwrote {json_path} and {md_path}")


def main() -> None:
    parser = build_parser()
    args = parser.parse_args()
    anyio.run(_run, args, results_dir(parser, args))


if __name__ == "__main__":
    main()
