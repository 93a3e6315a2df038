"""A held call's task followed from a 2026-07-28 client: the gateway config (the recorder
upstream over stdio, ``recorder__record`` asked about, agent and approver tokens) and the
``notifications/tasks`` frames a listen stream brings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from approvals_e2e_support import AGENT, AGENT_TOKEN, ALICE, ALICE_TOKEN, RECORDER
from support import write_config
from tasks_client import Raw

HELD_POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 2m}}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
"""


def held_recorder_config(directory: Path, **sections: Any) -> Path:
    """The config (policy and recorder log beside it), with ``sections`` added (``storage``...)."""
    policy = directory / "policy.yaml"
    policy.write_text(HELD_POLICY, encoding="utf-8")
    log = str(directory / "executions.jsonl")
    recorder = {"name": "recorder", "command": sys.executable, "args": [RECORDER, "--log", log]}
    auth = {
        "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
        "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
    }
    policies = {"files": [str(policy)]}
    return write_config(directory, [recorder], policies=policies, auth=auth, **sections)


class TaskFrames:
    """The ``notifications/tasks`` frames a client heard (its ``on_task``); `until` waits for
    a status."""

    def __init__(self) -> None:
        self.heard: list[dict[str, Any]] = []
        self._news = anyio.Event()

    async def __call__(self, frame: Raw) -> None:
        self.heard.append(frame.data)
        self._news.set()

    async def until(self, status: str) -> dict[str, Any]:
        """The first frame heard with ``status``, once there is one."""
        while not any(frame["status"] == status for frame in self.heard):
            self._news = anyio.Event()
            await self._news.wait()
        return next(frame for frame in self.heard if frame["status"] == status)
