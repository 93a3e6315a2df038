"""Helpers of the approvals end-to-end suite: the gateway config, clients, and waiting on the API.

Imported by module name (``import approvals_e2e_support``): pytest puts this directory on
``sys.path``. Every client is real: `mcp.Client` over streamable HTTP with an agent token, and
`httpx2.AsyncClient` on the REST API with an approver, worker or agent token.
"""

from __future__ import annotations

import contextlib
import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from paths import HARNESS, TESTS
from support import serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets._sdk_compat import create_mcp_http_client

HERE = TESTS / "e2e" / "approvals"
RECORDER = str(HARNESS / "recorder_server.py")
POLICY = str(HERE / "fixtures" / "policy.yaml")

AGENT = "agent:bot"
AGENT_TOKEN = "e2e-agent-token"
OTHER_AGENT = "agent:other"
OTHER_AGENT_TOKEN = "e2e-other-agent-token"
INTERN = "agent:intern"
INTERN_TOKEN = "e2e-intern-token"
"""An agent with role ``intern``: the policy denies it production values."""
ALICE = "user:alice"
ALICE_TOKEN = "e2e-alice-token"
"""An approver with role ``security``: may decide every held call of the suite's policy."""
BOB = "user:bob"
BOB_TOKEN = "e2e-bob-token"
"""An approver without roles: authenticated, but not an approver of ``role:security`` rules."""
WORKER = "svc:worker"
WORKER_TOKEN = "e2e-worker-token"

EXTERNAL_TOOLS = [
    {
        "name": "lookup",
        "description": "Look a customer up in the CRM (answered by a worker).",
        "input_schema": {
            "type": "object",
            "properties": {"customer": {"type": "string"}},
            "required": ["customer"],
            "additionalProperties": False,
        },
    },
    {
        "name": "lookup_later",
        "description": "The same lookup; the policy holds it only briefly.",
        "input_schema": {
            "type": "object",
            "properties": {"customer": {"type": "string"}},
            "required": ["customer"],
        },
    },
]

T = TypeVar("T")
R = TypeVar("R")


def e2e_config(
    directory: Path,
    *,
    log: Path,
    port: int | None = None,
    policy: str = POLICY,
    approvers: Sequence[dict[str, Any]] = (),
    audit: bool = False,
) -> Path:
    """A gateway config: the recorder upstream, the suite's policy (or ``policy``), SQLite
    approvals, tokens (plus ``approvers``), and the audit log in ``directory`` when ``audit``."""
    recorder = {
        "name": "recorder",
        "transport": "stdio",
        "command": sys.executable,
        "args": [RECORDER, "--log", str(log)],
    }
    sections: dict[str, Any] = {
        "policies": {"files": [policy]},
        "approvals": {
            "store": "sqlite",
            "path": str(directory / "pending.db"),
            "progress_interval": 0.2,
        },
        "auth": {
            "agents": [
                {"id": AGENT, "token": AGENT_TOKEN},
                {"id": OTHER_AGENT, "token": OTHER_AGENT_TOKEN},
                {"id": INTERN, "token": INTERN_TOKEN, "roles": ["intern"]},
            ],
            "approvers": [
                {"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]},
                {"id": BOB, "token": BOB_TOKEN},
                *approvers,
            ],
            "workers": [{"id": WORKER, "token": WORKER_TOKEN}],
        },
        "external_tools": EXTERNAL_TOOLS,
    }
    if port is not None:
        sections["listen"] = {"host": "127.0.0.1", "port": port}
    if audit:
        sections["events"] = {"audit": {"path": str(directory / "audit.db")}}
    return write_config(directory, [recorder], **sections)


def marker(label: str) -> str:
    """A value no other test uses, so identical-call reuse never crosses tests."""
    return f"{label}-{uuid.uuid4().hex[:10]}"


def executions(log: Path, value: str) -> list[dict[str, Any]]:
    """Arguments of every upstream execution whose ``value`` argument is ``value``."""
    if not log.exists():
        return []
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    return [line["arguments"] for line in lines if line["arguments"].get("value") == value]


@dataclass(frozen=True)
class Rig:
    """A running gateway (in-process, served by uvicorn) and its recorder's execution log."""

    base: str
    log: Path
    gateway: Gateway

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def executions(self, value: str) -> list[dict[str, Any]]:
        """Upstream executions of calls whose ``value`` argument is ``value``."""
        return executions(self.log, value)


@contextlib.asynccontextmanager
async def served_rig(directory: Path, **options: Any) -> AsyncIterator[Rig]:
    """A gateway on `e2e_config` (``options`` pass on) under uvicorn on 127.0.0.1."""
    log = directory / "executions.jsonl"
    gateway = Gateway.from_config(e2e_config(directory, log=log, **options))
    async with serve_asgi(build_app(gateway)) as base:
        yield Rig(base=base, log=log, gateway=gateway)


@contextlib.asynccontextmanager
async def api_client(
    base: str, token: str | None = ALICE_TOKEN
) -> AsyncIterator[httpx2.AsyncClient]:
    """The REST API as the holder of ``token`` (an approver by default; None: no token)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        yield client


@contextlib.asynccontextmanager
async def agent_client(
    url: str,
    mode: str,
    *,
    token: str = AGENT_TOKEN,
    elicitation_callback: Any = None,
    session: str | None = None,
) -> AsyncIterator[Client]:
    """An `mcp.Client` on the gateway's /mcp as the agent holding ``token`` (a 2026-07-28
    client names its ``session`` with the ``Lockgate-Session`` header)."""
    headers = {"Authorization": f"Bearer {token}"}
    if session is not None:
        headers["Lockgate-Session"] = session
    http = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30, read=60))
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport,
            mode=mode,
            elicitation_callback=elicitation_callback,
            read_timeout_seconds=30,
        ) as client:
            yield client


def answering(
    action: str, content: dict[str, Any] | None = None, *, asked: list[Any] | None = None
) -> Callable[[ClientRequestContext, types.ElicitRequestParams], Awaitable[types.ElicitResult]]:
    """An elicitation callback giving one fixed answer; ``asked`` collects the questions."""

    async def callback(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        if asked is not None:
            asked.append(params)
        return types.ElicitResult(action=action, content=content)

    return callback


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool result's first content block."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def pending_meta(result: types.CallToolResult) -> dict[str, Any]:
    """``_meta["lockgate/pending"]`` of a result (empty when absent)."""
    meta = result.meta or {}
    found = meta.get("lockgate/pending")
    return dict(found) if isinstance(found, dict) else {}


async def wait_for_call(
    api: httpx2.AsyncClient,
    value: str,
    *,
    key: str = "value",
    path: str = "/api/approvals",
    state: str = "pending",
    kind: str | None = None,
    timeout: float = 30,
) -> dict[str, Any]:
    """Poll ``path`` until a call whose ``args[key]`` is ``value`` is in ``state`` (and of
    ``kind``, when given); its record.

    Polling is the only signal a held call gives an approver outside the gateway.
    """
    params = {"state": state} | ({"kind": kind} if kind is not None else {})
    with anyio.fail_after(timeout):
        while True:
            response = await api.get(path, params=params)
            assert response.status_code == 200, response.text
            found = [c for c in response.json()["items"] if c["args"].get(key) == value]
            if found:
                assert len(found) == 1, found
                return dict(found[0])
            await anyio.sleep(0.02)


async def wait_for_state(
    api: httpx2.AsyncClient,
    id: str,
    state: str,
    *,
    path: str = "/api/approvals",
    timeout: float = 30,
) -> dict[str, Any]:
    """Poll ``GET {path}/{id}`` until the call is in ``state``; its record."""
    with anyio.fail_after(timeout):
        while True:
            response = await api.get(f"{path}/{id}")
            assert response.status_code == 200, response.text
            if response.json()["state"] == state:
                return dict(response.json())
            await anyio.sleep(0.02)


async def decide(api: httpx2.AsyncClient, id: str, decision: str, **body: Any) -> httpx2.Response:
    """``POST /api/approvals/{id}/decision``."""
    return await api.post(f"/api/approvals/{id}/decision", json={"decision": decision, **body})


async def while_held(
    call: Callable[[], Awaitable[R]], then: Callable[[], Awaitable[T]]
) -> tuple[R, T]:
    """Start ``call``; run ``then`` (which finds and decides the held call) concurrently.

    Returns the call's result and what ``then`` returned.
    """
    results: list[R] = []

    async def run_call() -> None:
        results.append(await call())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_call)
        outcome = await then()
    return results[0], outcome
