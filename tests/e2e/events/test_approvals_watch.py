"""``lockgate approvals watch``: an approver sees each held call (with the command to approve it)
and each decision live, as a subprocess against a served gateway; ``events tail`` says whose
events it follows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
from events_e2e_support import local_config
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import CallContext, Principal

POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: ops-holds
    tools: [local__held]
    effect: ask
    reason: needs an operator
    approval: {approvers: ["role:ops"], hold: 0s}
"""
OPS = Principal(id="user:ops", roles=frozenset({"ops"}))


def _config(tmp_path: Path) -> Path:
    auth = {"approvers": [{"id": OPS.id, "token": "ops-token", "roles": ["ops"]}]}
    return local_config(tmp_path, POLICY, auth)


def _lockgate(*args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "gateway.cli", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def test_watch_prints_held_calls_and_decisions(tmp_path: Path) -> None:
    async with (
        Gateway.from_config(_config(tmp_path)) as gateway,
        serve_asgi(build_app(gateway, manage_gateway=False)) as base,
    ):
        before = gateway.events.subscriber_count
        watch = _lockgate("approvals", "watch", "-n", "2", "--url", base, "--token", "ops-token")
        with anyio.fail_after(30):  # both streams subscribed
            await gateway.events.wait_subscribers(before + 1)
        ctx = CallContext(principal=Principal(id="agent:a"))
        await gateway.call_tool("local__held", {"note": "x"}, ctx)
        (call,) = await gateway.store.list(tool="local__held")
        await gateway.approvals.decide(call.id, "approve", by=OPS, channel="api")
        try:
            out, err = await anyio.to_thread.run_sync(lambda: watch.communicate(timeout=30))
        except subprocess.TimeoutExpired:
            watch.kill()
            out, err = watch.communicate()
            raise AssertionError(f"watch printed {out!r}, {err!r}") from None
    held, decided = out.strip().splitlines()
    assert f"held {call.id}: local__held for agent:a (rule ops-holds): needs an operator" in held
    assert held.endswith(f"approve with: lockgate approvals approve {call.id}")
    assert f"approve {call.id}: local__held by user:ops via api" in decided
    helped = await anyio.to_thread.run_sync(lambda: _lockgate("events", "tail", "--help"))
    help_text = " ".join(helped.communicate(timeout=30)[0].split())
    assert "a `lockgate call` runs a gateway of its own, in its own process" in help_text
