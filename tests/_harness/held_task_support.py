"""A held call's task: the gateway config (a policy asking about calls, agent and approver
tokens; `held_recorder_config` with the recorder upstream over stdio), a served gateway with a
tasks client and the REST API (`held_rig`), and the ``notifications/tasks`` frames a 2026-07-28
client's listen stream brings."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from approvals_e2e_support import AGENT, AGENT_TOKEN, ALICE, ALICE_TOKEN, RECORDER, api_client
from gateway_faces import Face
from mcp import Client
from support import serve_asgi, write_config
from tasks_client import Raw, open_tasks_client

from gateway.gateway import Gateway
from gateway.http.app import build_app

HELD_POLICY = """\
version: 1
defaults: {effect: allow, approval: {approvers: ["role:security"], expires: 2m}}
rules:
  - {id: held, tools: [recorder__record], effect: ask}
"""


def held_config(
    directory: Path, servers: list[dict[str, Any]], policy: str, **sections: Any
) -> Path:
    """The config of ``servers`` with ``policy`` (written beside it), the agent's token, alice
    approving as ``role:security``, and ``sections`` added (``storage``, ``approvals``...)."""
    policy_file = directory / "policy.yaml"
    policy_file.write_text(policy, encoding="utf-8")
    auth = {
        "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
        "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
    }
    policies = {"files": [str(policy_file)]}
    return write_config(directory, servers, policies=policies, auth=auth, **sections)


def held_recorder_config(directory: Path, **sections: Any) -> Path:
    """The config (policy and recorder log beside it), with ``sections`` added (``storage``...)."""
    log = str(directory / "executions.jsonl")
    recorder = {"name": "recorder", "command": sys.executable, "args": [RECORDER, "--log", log]}
    return held_config(directory, [recorder], HELD_POLICY, **sections)


@contextlib.asynccontextmanager
async def held_rig(
    directory: Path, face: Face, servers: list[dict[str, Any]], policy: str
) -> AsyncIterator[tuple[Gateway, Client, httpx2.AsyncClient]]:
    """A served gateway on `held_config` (approvals in SQLite beside it), the REST API as alice,
    and a tasks client as the agent on ``face`` (a stdio face runs its own gateway on the same
    config and SQLite file)."""
    config = held_config(
        directory,
        servers,
        policy,
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
    )
    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as base,
        api_client(base) as api,
        open_tasks_client(face, config=config, url=f"{base}/mcp", token=AGENT_TOKEN) as client,
    ):
        yield gateway, client, api


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
