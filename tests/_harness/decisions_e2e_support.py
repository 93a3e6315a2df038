"""Helpers of the grants, stages and break-glass end-to-end tests: the people who decide, the
``lockgate`` CLI as a subprocess, and what the audit log holds. Imported by module name."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from approvals_e2e_support import HERE, Rig, wait_for_call
from mcp import Client

from gateway.audit.log import read_entries

DECISIONS_POLICY = str(HERE / "fixtures" / "decisions_policy.yaml")

SECURITY_TOKENS = {f"user:sec{i}": f"e2e-sec{i}-token" for i in range(2, 21)}
"""With ``user:alice``, twenty approvers of role ``security``."""
CTO, CTO_TOKEN = "user:cto", "e2e-cto-token"
ONCALL, ONCALL_TOKEN = "user:pager", "e2e-pager-token"
APPROVERS: list[dict[str, Any]] = [
    *({"id": id, "token": token, "roles": ["security"]} for id, token in SECURITY_TOKENS.items()),
    {"id": CTO, "token": CTO_TOKEN},
    {"id": ONCALL, "token": ONCALL_TOKEN, "roles": ["oncall"]},
]
NO_HOLD: Any = {"lockgate/hold": 0}
"""``_meta`` of a call answered "pending" at once when held."""
HELD = "recorder__record"
"""The tool every rule of the decisions policy holds."""


async def left_held(
    client: Client, api: httpx2.AsyncClient, value: str
) -> tuple[types.CallToolResult, str]:
    """Call `HELD` with ``value`` without waiting for a decision (`NO_HOLD`); the "pending"
    answer and the id of the held call, as ``api``'s approver sees it."""
    with anyio.fail_after(30):
        answer = await client.call_tool(HELD, {"value": value}, meta=NO_HOLD)
    return answer, str((await wait_for_call(api, value))["id"])


async def lockgate(rig: Rig, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``lockgate ARGS --url ... --token TOKEN`` as a subprocess (never raises on failure)."""
    command = [sys.executable, "-m", "gateway.cli", *args, "--url", rig.base, "--token", token]
    done = await anyio.run_process(command, check=False)
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


async def lockgate_together(
    rig: Rig, *commands: tuple[str, ...]
) -> list[subprocess.CompletedProcess[str]]:
    """Several ``lockgate`` commands at once, each ``(token, *args)``; their results in order."""
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    async def run(index: int, token: str, *args: str) -> None:
        results[index] = await lockgate(rig, token, *args)

    async with anyio.create_task_group() as tg:
        for index, (token, *args) in enumerate(commands):
            tg.start_soon(run, index, token, *args)
    return [results[index] for index in range(len(commands))]


def audited(directory: Path, kind: str, **fields: Any) -> list[dict[str, Any]]:
    """The data of every audit-log entry of type ``kind`` (that has these ``fields``)."""
    entries = (dict(entry.body["data"]) for entry in read_entries(directory / "audit.db", [kind]))
    return [data for data in entries if all(data.get(k) == v for k, v in fields.items())]


async def on_audit_log(
    directory: Path, kind: str, wanted: Callable[[dict[str, Any]], bool]
) -> list[dict[str, Any]]:
    """The audit-log entries of ``kind`` that are ``wanted``, once there are any: call events
    reach the log in the background (group-committed), decisions before they take effect."""
    with anyio.fail_after(30):
        while not (found := [data for data in audited(directory, kind) if wanted(data)]):
            await anyio.sleep(0.05)
    return found
