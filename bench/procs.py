"""Processes under test: the upstream server and the gateway, their configs, and CPU from /proc."""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
UPSTREAM = REPO / "bench" / "upstream.py"
POLICY = REPO / "bench" / "policy.yaml"
PREFIX = "up__"
"""Exposed-name prefix of the upstream's tools behind the gateway (server name ``up``)."""
GATEWAY_CLI = (sys.executable, "-m", "gateway.cli")
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback TCP port nobody listens on right now, below the kernel's ephemeral range.

    A port the kernel hands out for ``bind(0)`` is also one it may give any outgoing connection
    (to PostgreSQL, to another server) before the server meant to listen there binds it; on a
    busy machine that server then fails with "address already in use". Ports below the range
    are never handed out that way.
    """
    low = _ephemeral_low()
    while True:
        port = random.randrange(10_000, low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii")
        return max(int(text.split()[0]), 12_000)
    except (OSError, ValueError, IndexError):
        return 32_768


def upstream_command(tools: int, http_port: int | None = None) -> list[str]:
    """The command line of the bench upstream with ``tools`` tools (stdio unless a port)."""
    command = [sys.executable, str(UPSTREAM), "--tools", str(tools)]
    return [*command, "--http", str(http_port)] if http_port is not None else command


def write_config(
    directory: Path, tools: int, *, port: int = 0, audit: bool = True, policy: Path = POLICY
) -> Path:
    """A gateway config: the upstream over stdio, the bench policy, SQLite approvals, events on.

    ``audit`` keeps the (default) hash-chained SQLite audit log of the events; ``policy`` is
    the policy file (``bench/policy_limited.yaml`` adds a rate limit to every allowed call).
    """
    command = upstream_command(tools)
    body = {
        "version": 1,
        "id": "lockgate-bench",
        "listen": {"host": "127.0.0.1", "port": port},
        "servers": [
            {"name": "up", "transport": "stdio", "command": command[0], "args": command[1:]}
        ],
        "policies": {"files": [str(policy)]},
        "approvals": {"store": "sqlite", "path": str(directory / f"pending-{tools}-{port}.db")},
        "events": {
            "audit": {"enabled": audit, "path": str(directory / f"audit-{tools}-{port}.db")}
        },
    }
    path = directory / f"gateway-{tools}-{port}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads; not its children)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK  # utime, stime


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid``."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def wait_http(
    url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0, log: Path | None = None
) -> None:
    """Wait until ``url`` answers over HTTP (or fail when ``proc`` dies first, with the end of
    ``log`` where it wrote); a gateway's ``/healthz`` must also say ``ok`` (every upstream up: a
    busy machine may start one late)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = log.read_text(errors="replace")[-3000:] if log is not None else ""
            raise RuntimeError(
                f"{proc.args!r} exited with {proc.returncode} before serving\n{said}"
            )
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if not url.endswith("/healthz") or json.load(response).get("status") == "ok":
                    return
            time.sleep(0.05)
        except urllib.error.HTTPError:
            return  # an HTTP answer, even 4xx, means it is serving
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{url} not serving after {timeout:g} s")


@dataclass(frozen=True)
class Served:
    """A process serving MCP over streamable HTTP."""

    url: str
    pid: int

    def upstream_pid(self) -> int | None:
        """The gateway's upstream (its only child process), if any."""
        kids = children(self.pid)
        return kids[0] if kids else None


@dataclass(frozen=True)
class Launch:
    """A server to start: its command line, port and the path answering once it serves."""

    command: Sequence[str]
    port: int
    ready_path: str


@contextlib.contextmanager
def serve(launches: Sequence[Launch], log: Path) -> Iterator[list[Served]]:
    """Start every server at once, wait until each serves, stop them all when the block ends."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(log, "ab") as errors:
            for launch in launches:
                procs.append(
                    subprocess.Popen(
                        launch.command, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors
                    )
                )
        for launch, proc in zip(launches, procs, strict=True):
            wait_http(f"http://127.0.0.1:{launch.port}{launch.ready_path}", proc, log=log)
        yield [
            Served(f"http://127.0.0.1:{launch.port}/mcp", proc.pid)
            for launch, proc in zip(launches, procs, strict=True)
        ]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def upstream_launch(tools: int) -> Launch:
    """The bench upstream over streamable HTTP (the "direct" HTTP target)."""
    port = free_port()
    return Launch(upstream_command(tools, port), port, "/mcp")


def gateway_launch(
    directory: Path, tools: int, *, audit: bool = True, policy: Path = POLICY
) -> Launch:
    """``lockgate serve`` in front of the upstream over stdio (the "gateway" HTTP target)."""
    port = free_port()
    config = write_config(directory, tools, port=port, audit=audit, policy=policy)
    return Launch([*GATEWAY_CLI, "serve", "-c", str(config), "--port", str(port)], port, "/healthz")
