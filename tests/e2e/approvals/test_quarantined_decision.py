"""A held call whose tool is quarantined before the decision (its definition changed upstream
and waits for review) is not approved into the dark: the approver reads that the definition
changed and how to review it, the call ends ``failed`` and never runs, and the caller reads why.

Real parts: the echo server over stdio (its ``rug_pull`` tool changes the ``weather`` tool), the
gateway's HTTP app under uvicorn, `mcp.Client` in both eras, the REST API as an approver, the
SQLite pending store and the audit log.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from approvals_e2e_support import (
    AGENT,
    AGENT_TOKEN,
    ALICE,
    ALICE_TOKEN,
    agent_client,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
)
from support import MODES, echo_upstream, serve_asgi, write_config

from gateway.audit.log import AuditLog
from gateway.gateway import Gateway
from gateway.http.app import build_app

WEATHER = "echo__weather"
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: weather-needs-security
    tools: [echo__weather]
    effect: ask
    approval: {approvers: ["role:security"], hold: 300ms, expires: 2m}
"""


def _config(directory: Path) -> Path:
    policy = directory / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return write_config(
        directory,
        [echo_upstream()],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(directory / "pending.db")},
        events={"audit": {"path": str(directory / "audit.db")}},
        startup_wait=60,  # the upstream's first connection, on a loaded machine
        auth={
            "agents": [{"id": AGENT, "token": AGENT_TOKEN}],
            "approvers": [{"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]}],
        },
    )


@contextlib.asynccontextmanager
async def _served(directory: Path) -> AsyncIterator[tuple[Gateway, str]]:
    gateway = Gateway.from_config(_config(directory))
    async with serve_asgi(build_app(gateway)) as base:
        yield gateway, base


@pytest.mark.parametrize("mode", MODES)
async def test_approving_a_call_whose_tool_is_quarantined_fails_it_and_says_why(
    tmp_path: Path, mode: str
) -> None:
    args = {"city": marker("oslo")}
    async with (
        _served(tmp_path) as (gateway, base),
        agent_client(f"{base}/mcp", mode) as client,
        api_client(base) as api,
    ):
        with anyio.fail_after(60):
            held = pending_meta(await client.call_tool(WEATHER, args))
            assert held["state"] == "pending", held
            async with gateway.events.subscribe(["tool.pin_changed"]) as changes:
                await client.call_tool("echo__rug_pull", {"part": "description"})
                assert (await anext(changes)).data["action"] == "quarantine"

            refused = await decide(api, held["id"], "approve")
            record = (await api.get(f"/api/approvals/{held['id']}")).json()
            reissued = await client.call_tool(WEATHER, args)

            shown = (await api.get(f"/api/pins/{WEATHER}")).json()
            accepted = await api.post(
                f"/api/pins/{WEATHER}/accept", json={"pin": shown["changed_pin"]}
            )
            assert accepted.status_code == 200, accepted.text
            delivered = await client.call_tool(WEATHER, args)

    assert refused.status_code == 422, refused.text
    answer = refused.json()["detail"]
    assert "changed upstream" in answer
    assert "waits for review" in answer
    assert f"lockgate pins diff {WEATHER}" in answer
    assert "not available now" not in answer  # not "its server may be down"

    assert (record["state"], record["decision"], record["decided_by"]) == ("failed", "error", ALICE)
    assert "waits for review" in record["error"]

    assert reissued.is_error  # still quarantined: refused before any approval lookup
    assert "definition changed upstream" in text_of(reissued)
    assert "waits for review" in text_of(reissued)

    assert delivered.is_error  # the identical call now gets the failed outcome, not a run
    assert "it was not run" in text_of(delivered)
    assert "sky" not in text_of(delivered)

    async with AuditLog(tmp_path / "audit.db") as audit:
        resolved = [
            entry.body["data"]
            for entry in await audit.tail(100)
            if entry.kind == "tool.approval.resolved"
            and entry.body["data"]["approval_id"] == held["id"]
        ]
    assert [(r["decision"], r["decided_by"]) for r in resolved] == [("error", ALICE)]
    assert "waits for review" in resolved[0]["message"]
