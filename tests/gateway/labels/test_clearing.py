"""Clearing a session's labels is an approver's act, on record; the agent cannot.

Real parts: the dataflow upstream over stdio, the gateway's HTTP app under uvicorn with tokens
and an audit log, `mcp.Client` as the agent (2026-07-28, a named session), the REST API and the
``lockgate sessions`` CLI as a subprocess.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
from dataflow_support import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_TOKEN,
    FETCH,
    OTHER_TENANT_TOKEN,
    READ,
    SEND,
    sent,
    served_config,
)
from decisions_e2e_support import audited
from gateway_faces import MODERN
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

SESSION = "k1"


def _api(base: str, token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


@contextlib.asynccontextmanager
async def _agent(url: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Lockgate-Session": SESSION}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), mode=MODERN) as client,
    ):
        yield client


async def _cli(base: str, *args: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "gateway.cli", "sessions", *args, "--url", base]
    done = await anyio.run_process(
        [*command, "--token", APPROVER_TOKEN], check=False, stderr=sys.stderr.fileno()
    )
    return done.returncode, done.stdout.decode()


async def test_an_approver_clears_the_labels_on_record_and_the_agent_cannot(
    tmp_path: Path,
) -> None:
    gateway = Gateway.from_config(served_config(tmp_path))
    clear = f"/api/sessions/{SESSION}/labels/clear"
    body = {"principal": "agent:bot", "reason": "the page was our own intranet"}
    async with serve_asgi(build_app(gateway)) as base, _agent(f"{base}/mcp") as agent:
        await agent.call_tool(FETCH, {"url": "https://x.example"})
        await agent.call_tool(READ, {"path": "secrets.txt"})
        async with _api(base, AGENT_TOKEN) as as_agent:
            refused = await as_agent.post(clear, json=body)
        code, shown = await _cli(base, "labels", SESSION, "--principal", "agent:bot")
        assert code == 0
        assert shown.splitlines()[0].startswith("private: web__read_file (call ")
        assert shown.splitlines()[1].startswith("untrusted: web__fetch_page (call ")
        held = await agent.call_tool(SEND, {"to": "a@example.com", "body": "x"})
        code, cleared = await _cli(
            base,
            "clear-labels",
            SESSION,
            "--principal",
            "agent:bot",
            "--label",
            "untrusted",
            "--reason",
            "the page was our own intranet",
        )
        sent_after = await agent.call_tool(SEND, {"to": "a@example.com", "body": "y"})
    assert refused.status_code == 403
    assert held.is_error
    assert (code, cleared) == (0, "session k1 of agent:bot: cleared untrusted\n")
    assert not sent_after.is_error
    assert sent(tmp_path) == "a@example.com: y\n"
    [entry] = audited(tmp_path, "session.labels_cleared")
    assert entry["cleared_by"] == APPROVER
    assert entry["labels"] == ["untrusted"]
    assert [s["tool"] for s in entry["sources"]["untrusted"]] == [FETCH]
    assert entry["reason"] == "the page was our own intranet"


async def test_clearing_needs_a_reason_and_valid_label_names(tmp_path: Path) -> None:
    gateway = Gateway.from_config(served_config(tmp_path))
    clear = f"/api/sessions/{SESSION}/labels/clear"
    async with serve_asgi(build_app(gateway)) as base, _api(base, APPROVER_TOKEN) as api:
        no_reason = await api.post(clear, json={"principal": "agent:bot"})
        bad_name = await api.post(
            clear, json={"principal": "agent:bot", "reason": "r", "labels": ["Not A Label"]}
        )
    assert no_reason.status_code == 422
    assert bad_name.status_code == 400
    assert "invalid label 'Not A Label'" in bad_name.json()["detail"]


async def test_an_approver_of_another_tenant_neither_sees_nor_clears_the_labels(
    tmp_path: Path,
) -> None:
    gateway = Gateway.from_config(served_config(tmp_path))
    body = {"principal": "agent:bot", "reason": "not mine to clear"}
    async with serve_asgi(build_app(gateway)) as base, _agent(f"{base}/mcp") as agent:
        await agent.call_tool(FETCH, {"url": "https://x.example"})
        await agent.call_tool(READ, {"path": "secrets.txt"})
        async with _api(base, OTHER_TENANT_TOKEN) as eve, _api(base, APPROVER_TOKEN) as alice:
            seen_by_eve = await eve.get(f"/api/sessions/{SESSION}/labels?principal=agent:bot")
            cleared_by_eve = await eve.post(f"/api/sessions/{SESSION}/labels/clear", json=body)
            seen_by_alice = await alice.get(f"/api/sessions/{SESSION}/labels?principal=agent:bot")
        held = await agent.call_tool(SEND, {"to": "a@example.com", "body": "x"})
    assert seen_by_eve.json() == {"labels": [], "sources": {}}
    assert cleared_by_eve.json() == {"cleared": []}
    assert seen_by_alice.json()["labels"] == ["private", "untrusted"]
    assert held.is_error
    assert sent(tmp_path) == ""
    assert audited(tmp_path, "session.labels_cleared") == []
