"""Helpers for the approvals tests; also run as a separate process that uses the same SQLite file.

Commands: ``crash PATH N`` creates N pending calls and one executing call, prints their ids as
JSON, then blocks until killed; ``approve PATH ID`` approves a pending call and exits.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from gateway.approvals import PendingCall, PendingStore
from gateway.sqlite.pending import SQLitePendingStore

StoreFactory = Callable[..., PendingStore]
"""Builds a store of the backend under test (the ``make_store`` fixture)."""

ROOT = Path(__file__).resolve().parents[2]


def helper_command(*args: str) -> list[str]:
    """The command line running this file as a separate process."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


def helper_env() -> dict[str, str]:
    """The environment for `helper_command`: the repository importable."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def new_call(**overrides: Any) -> PendingCall:
    """A pending approval with plausible defaults; any `PendingCall.new` argument can be given."""
    values: dict[str, Any] = {
        "kind": "approval",
        "call_id": "call-1",
        "principal": "agent:ci",
        "session_id": "session-1",
        "tool": "github_create_issue",
        "server": "github",
        "upstream_tool": "create_issue",
        "tool_pin": "pin-1",
        "args": {"title": "Build is red", "labels": ["ci"]},
        "policy_version": "policy-1",
        "rule_id": "ask-writes",
        "reason": "writes to GitHub need a human",
        "ttl": 300.0,
    }
    values.update(overrides)
    return PendingCall.new(**values)


async def _crash(path: str, count: int) -> None:
    store = SQLitePendingStore(path)
    pending = [(await store.create(new_call(call_id=f"call-{i}"))).id for i in range(count)]
    running = await store.create(new_call(call_id="call-running"))
    await store.transition(running.id, expect={"pending"}, to="approved", decided_by="alice")
    await store.transition(running.id, expect={"approved"}, to="executing")
    print(json.dumps({"pending": pending, "executing": running.id}), flush=True)
    await anyio.to_thread.run_sync(threading.Event().wait)  # until SIGKILL


async def _approve(path: str, id: str) -> None:
    async with SQLitePendingStore(path) as store:
        await store.transition(id, expect={"pending"}, to="approved", decided_by="other-process")


if __name__ == "__main__":
    command, path, arg = sys.argv[1:4]
    if command == "crash":
        anyio.run(_crash, path, int(arg))
    else:
        anyio.run(_approve, path, arg)
