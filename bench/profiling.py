"""Profile mode: py-spy samples ``lockgate serve`` during the sequential echo scenario.

py-spy attaches to the already-running, warmed-up gateway process (no instrumentation inside
it, so the profile is of the same process the benchmark measures) and records only while the
calls run. The collapsed stacks are summarised by package, by own time and by inclusive time.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.measure import Target, call_latencies, connect, quantiles, throughput
from bench.procs import PREFIX, gateway_launch, serve

PACKAGES = (
    "gateway", "toolsets", "policies", "mcp_types", "mcp", "pydantic_core", "pydantic",
    "jsonschema_rs", "jsonschema", "referencing", "starlette", "uvicorn", "sse_starlette",
    "h11", "httptools", "anyio", "asyncio", "json", "sqlite3", "cel", "logging", "typing",
)  # fmt: skip
IDLE = frozenset(
    {
        "EpollSelector.select",
        "Condition.wait",
        "ThreadedChildWatcher._do_waitpid",
        "Thread._wait_for_tstate_lock",
        "Event.wait",
        "SimpleQueue.get",
    }
)
"""Leaf frames that wait, not work: py-spy's own idle detection misses them in containers."""


def py_spy() -> str:
    """The py-spy executable (installed next to this interpreter, or on ``PATH``)."""
    beside = Path(sys.executable).parent / "py-spy"
    found = str(beside) if beside.exists() else shutil.which("py-spy")
    if found is None:
        raise SystemExit("profile mode needs py-spy: pip install py-spy")
    return found


@contextlib.contextmanager
def recording(
    pid: int, output: Path, rate: int, *, gil: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """py-spy recording process ``pid`` into ``output`` (collapsed stacks) until the block ends.

    ``gil`` keeps only samples of the thread holding the GIL: Python CPU, without syscalls.
    """
    command = [py_spy(), "record", "-p", str(pid), "-f", "raw", "--nolineno", "-r", str(rate)]
    command += ["--nonblocking", "-o", str(output), *(["--gil"] if gil else [])]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        _, errors = proc.communicate(timeout=30)
        if not output.exists():
            raise RuntimeError(f"py-spy wrote nothing: {errors.decode(errors='replace')}")


def read_stacks(path: Path) -> Counter[tuple[str, ...]]:
    """Collapsed stacks (``frame;frame;... count``), root first, without idle waits."""
    stacks: Counter[tuple[str, ...]] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = tuple(stack.split(";"))
        if stack and frames[-1].partition(" (")[0] not in IDLE:
            stacks[frames] += int(count)
    return stacks


def package(frame: str) -> str:
    """The package a frame ``function (path/module.py)`` belongs to."""
    where = frame.rpartition("(")[2].rstrip(")")
    parts = where.replace("\\", "/").split("/")
    for part in parts:
        name = part.removesuffix(".py")
        if name in PACKAGES:
            return name
    return parts[0].removesuffix(".py") if parts else "?"


def summary(stacks: Counter[tuple[str, ...]], top: int = 25) -> str:
    """Own time by package, own time by frame, inclusive time by frame (ours and mcp's)."""
    total = sum(stacks.values()) or 1
    own: Counter[str] = Counter()
    by_package: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for stack, count in stacks.items():
        own[stack[-1]] += count
        by_package[package(stack[-1])] += count
        for frame in set(stack):
            inclusive[frame] += count

    def block(title: str, counts: Counter[str], keep: tuple[str, ...] = ()) -> list[str]:
        rows = [(f, n) for f, n in counts.most_common() if not keep or package(f) in keep]
        lines = [f"\n{title}", f"{'%':>6}  {'samples':>7}  frame"]
        return lines + [f"{100 * n / total:6.1f}  {n:7d}  {f}" for f, n in rows[:top]]

    lines = [f"{total} samples, waits (epoll, thread conditions, waitpid) left out"]
    lines += block("Own time by package", by_package)
    lines += block("Own time by frame", own)
    ours = ("gateway", "toolsets", "policies", "mcp")
    lines += block("Inclusive time, frames of gateway/toolsets/policies/mcp", inclusive, ours)
    return "\n".join(lines)


CALLS: dict[str, dict[str, Any]] = {"echo": {"text": "hello, gateway"}, "big": {"kib": 256}}


@dataclass(frozen=True)
class ProfileRun:
    """What to profile: ``calls`` sequential calls of ``tool`` in ``era``."""

    era: str
    calls: int
    tool: str = "echo"
    rate: int = 250
    gil: bool = False
    audit: bool = True
    sessions: int = 1


async def profile(workdir: Path, run: ProfileRun) -> str:
    """Run a sequential scenario (or ``sessions`` concurrent ones) against a profiled gateway;
    the summary as text."""
    name = f"{run.era}-{run.tool}" + (f"-x{run.sessions}" if run.sessions > 1 else "")
    output = Path(tempfile.gettempdir()) / f"lockgate-bench-profile-{name}.txt"
    output.unlink(missing_ok=True)
    args = CALLS[run.tool]
    launch = gateway_launch(workdir, 3, audit=run.audit)
    with serve([launch], workdir / "processes.log") as (gateway,):
        target = Target("gateway", "http", gateway.url, PREFIX)
        if run.sessions > 1:
            return await _concurrent(target, gateway.pid, run, output)
        async with connect(target, run.era) as (client, _):
            await call_latencies(client, target.tool(run.tool), args, max(20, run.calls // 10))
            with recording(gateway.pid, output, run.rate, gil=run.gil):
                samples = await call_latencies(client, target.tool(run.tool), args, run.calls)
    q = quantiles(samples)
    head = (
        f"{run.calls} sequential {run.tool} calls over HTTP ({run.era}), "
        f"p50 {q['p50']:.0f} µs, p99 {q['p99']:.0f} µs"
    )
    return head + f"\nraw stacks: {output}\n" + summary(read_stacks(output))


async def _concurrent(target: Target, pid: int, run: ProfileRun, output: Path) -> str:
    """``run.sessions`` sessions calling at once, ``run.calls`` calls in all, while recorded."""
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            (await stack.enter_async_context(connect(target, run.era)))[0]
            for _ in range(run.sessions)
        ]
        tool, args = target.tool(run.tool), CALLS[run.tool]
        await throughput(clients, tool, args, max(run.sessions, run.calls // 10))
        with recording(pid, output, run.rate, gil=run.gil):
            rate = await throughput(clients, tool, args, run.calls)
    head = f"{run.calls} {run.tool} calls over HTTP ({run.era}), {run.sessions} sessions: "
    return head + f"{rate:,.0f} calls/s\nraw stacks: {output}\n" + summary(read_stacks(output))
