"""An ``oauth`` call held for approval when the gateway restarts before the decision (real
parts: oidc-provider, login and consent in Chromium, the protected upstream, one SQLite store,
approved over the REST API; both client eras): the vault keeps the caller's grant, so after the
restart the approved call runs as that caller, once, both when the restarted gateway settles
the call's task on its own and when the caller re-issues a call answered "pending"."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from credentials_support import AGENTS, APPROVER, approve, vault_keys
from gateway_faces import Face
from oauth import NOTES, Provider, Upstream, oidc_provider
from oauth_gateway import ALICE, connect, oauth_config, oauth_server, served
from support import MODES, echo_upstream, free_port, mcp_http_client
from tasks_client import call_as_task, open_tasks_client, request, until_ended

PORT = free_port()
CALLBACK = f"http://127.0.0.1:{PORT}/oauth/callback"
POLICY = f"""\
version: 1
defaults: {{effect: allow}}
rules:
  - id: held
    tools: [notes__whoami, notes__my_notes]
    effect: ask
    approval: {{approvers: ["{APPROVER}"], expires: 5m, hold: 1s}}
"""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, redirect_uris=[CALLBACK]) as running:
        yield running


async def _held_before_restart(config: Path, face: Face) -> tuple[str, list[str]]:
    """On a gateway that then stops, Alice connects her account, calls ``notes__whoami`` as a
    task and ``notes__my_notes`` plainly (answered "pending"); (the task id, both approvals)."""
    token = AGENTS[ALICE]
    async with served(config, PORT) as (_gateway, base):
        await connect(base, ALICE)
        async with open_tasks_client(face, config=config, url=f"{base}/mcp", token=token) as c:
            created = await call_as_task(c, "notes__whoami", {})
        async with mcp_http_client(f"{base}/mcp", face.mode, token) as alice:
            pending = await alice.call_tool("notes__my_notes", {})  # held 1 s: "pending"
    assert created["status"] == "input_required", created
    assert pending.is_error
    assert pending.meta is not None
    return created["taskId"], [
        created["_meta"]["lockgate/pending"]["id"],
        pending.meta["lockgate/pending"]["id"],
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_calls_approved_after_a_restart_run_as_their_caller_from_the_vault(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    servers = [oauth_server(upstream.url), echo_upstream()]  # echo: a shared upstream, tasks
    config = oauth_config(tmp_path, servers, port=PORT, policies={"files": [str(policy)]})
    face, token = Face("http", mode), AGENTS[ALICE]
    with vault_keys(), anyio.fail_after(240):
        task_id, held = await _held_before_restart(config, face)
        async with (
            served(config, PORT) as (gateway, base),  # the restarted gateway
            gateway.parts.events.bus.subscribe(["tool.result"], buffer=100) as events,
        ):
            call_ids = [await approve(base, approval) for approval in held]
            async with open_tasks_client(face, config=config, url=f"{base}/mcp", token=token) as c:
                ended = await until_ended(c, task_id)
                outcome = ended.get("result") or await request(c, "tasks/result", task_id)
            async with mcp_http_client(f"{base}/mcp", mode, token) as alice:
                ran = await alice.call_tool("notes__my_notes", {})
            results = [e.data for e in events.ready(100)]
    assert ended["status"] == "completed", ended
    me: dict[str, Any] = outcome["structuredContent"]
    assert (me["sub"], me["aud"]) == ("alice", upstream.url)
    assert not ran.is_error, ran
    assert ran.structured_content == {"result": NOTES["alice"]}
    ran_once = [[r for r in results if r["call_id"] == call_id] for call_id in call_ids]
    assert [[r["is_error"] for r in each] for each in ran_once] == [[False], [False]]
