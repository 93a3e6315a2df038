"""Grants on held resource reads: an approver who approves a read the policy holds (a resource
``ask`` rule offering ``approval.grants``) "for this session" or "for this tool" lets later reads
that rule holds run without asking, on the same server only: the caller's in that session, or
anyone's of the tenant for a while. Each such read names the grant on its ``resource.read``.

One gateway serves the module: two echo servers (``echo``, ``other``) under
``fixtures/grants_policy.yaml``, agents over streamable HTTP in both eras, an approver on the
REST API. Each test writes notes of its own, so reads never meet another test's grant.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from support import MODES, echo_upstream, write_config
from surface_support import next_event, read_text, refused, serve_surface, uri

from gateway.events.bus import Subscription
from gateway.gateway import Gateway
from gateway.mcp.errors import REFUSED
from toolsets._sdk_compat import create_mcp_http_client

POLICY = Path(__file__).parent / "fixtures" / "grants_policy.yaml"
AGENT, AGENT_TOKEN = "agent:reader", "grants-agent-token"
OTHER, OTHER_TOKEN = "agent:other", "grants-other-token"
APPROVER_TOKEN = "grants-approver-token"
READ = "resources/read"


@dataclass(frozen=True)
class Rig:
    """The served gateway."""

    gateway: Gateway
    base: str

    @contextlib.asynccontextmanager
    async def agent(self, mode: str, token: str, session: str) -> AsyncIterator[Client]:
        """A client holding ``token`` in its own ``session`` (a 2026-07-28 client names it)."""
        headers = {"Authorization": f"Bearer {token}", "Lockgate-Session": session}
        http = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30, read=60))
        async with (
            http,
            Client(
                streamable_http_client(f"{self.base}/mcp", http_client=http),
                mode=mode,
                read_timeout_seconds=30,
            ) as client,
        ):
            yield client

    def events(self) -> contextlib.AbstractAsyncContextManager[Subscription]:
        return self.gateway.events.subscribe(
            ["tool.approval.requested", "resource.read"], name="grants-test"
        )


@pytest.fixture(scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    directory = tmp_path_factory.mktemp("surface-grants")
    config = write_config(
        directory,
        [echo_upstream("echo"), echo_upstream("other")],
        policies={"files": [str(POLICY)]},
        approvals={"store": "sqlite", "path": "pending.db"},
        auth={
            "agents": [{"id": AGENT, "token": AGENT_TOKEN}, {"id": OTHER, "token": OTHER_TOKEN}],
            "approvers": [{"id": "user:alice", "token": APPROVER_TOKEN, "roles": ["security"]}],
        },
    )
    async with serve_surface(config) as served:
        with anyio.fail_after(30):
            assert await served.gateway.wait_ready()
        yield Rig(served.gateway, served.url.removesuffix("/mcp"))


def note(server: str, name: str) -> str:
    """The gateway URI of note ``name`` on ``server``."""
    return uri(server, f"echo://notes/{name}")


async def write(client: Client, server: str, *names: str) -> None:
    for name in names:
        await client.call_tool(f"{server}__write_note", {"note": name, "text": f"{name} text"})


@contextlib.asynccontextmanager
async def approver(rig: Rig) -> AsyncIterator[httpx2.AsyncClient]:
    """The approver on the REST API."""
    headers = {"Authorization": f"Bearer {APPROVER_TOKEN}"}
    async with httpx2.AsyncClient(base_url=rig.base, headers=headers, timeout=30) as api:
        yield api


async def approved(rig: Rig, client: Client, server: str, name: str, grant: dict[str, Any]) -> str:
    """Read note ``name``: held (not approved within the hold of 0 s), approved with ``grant``
    over the REST API, read again (once approved, it is read); the grant's id."""
    async with rig.events() as events:
        error = await refused(client.read_resource(note(server, name)))
        args = {"server": server, "uri": f"echo://notes/{name}"}
        requested = await next_event(events, tool=READ, args=args)
    assert error.code == REFUSED
    async with approver(rig) as api:
        path = f"/api/approvals/{requested.data['approval_id']}/decision"
        response = await api.post(path, json={"decision": "approve", "grant": grant})
    assert response.status_code == 200, response.text
    assert await read_text(client, note(server, name)) == f"{name} text"
    return str(response.json()["grant_id"])


async def granted_read(rig: Rig, client: Client, server: str, name: str) -> Any:
    """Read note ``name`` without asking; the decision its ``resource.read`` carries."""
    async with rig.events() as events:
        assert await read_text(client, note(server, name)) == f"{name} text"
        read = await next_event(events, uri=f"echo://notes/{name}", server=server)
    assert read.type == "resource.read"
    return read.data["decision"]


async def asks(client: Client, server: str, name: str) -> bool:
    """Whether reading note ``name`` is held for an approver again (not read)."""
    try:
        await client.read_resource(note(server, name))
    except MCPError as exc:
        return exc.error.code == REFUSED and exc.error.message.startswith("Not read yet:")
    return False


@pytest.mark.parametrize("mode", MODES)
async def test_a_session_grant_covers_the_sessions_later_reads_of_that_rule_on_that_server(
    rig: Rig, mode: str
) -> None:
    first, later = f"session-{mode}-first", f"session-{mode}-later"
    async with rig.agent(mode, AGENT_TOKEN, f"{mode}-a") as client:
        await write(client, "echo", first, later)
        await write(client, "other", later)
        grant = await approved(rig, client, "echo", first, {"scope": "session"})
        decision = await granted_read(rig, client, "echo", later)
        elsewhere = await asks(client, "other", later)
    async with rig.agent(mode, AGENT_TOKEN, f"{mode}-b") as client:
        next_session = await asks(client, "echo", later)

    assert decision == {"effect": "ask", "rule_id": "notes-held", "grant": grant}
    assert elsewhere, "a grant made on server echo covers no read on server other"
    assert next_session


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_grant_covers_anyones_later_reads_of_that_rule_on_that_server(
    rig: Rig, mode: str
) -> None:
    first, later = f"tool-{mode}-first", f"tool-{mode}-later"
    async with rig.agent(mode, AGENT_TOKEN, f"{mode}-c") as client:
        await write(client, "echo", first, later)
        await write(client, "other", later)
        grant = await approved(rig, client, "echo", first, {"scope": "tool", "duration": 60})
    try:
        async with rig.agent(mode, OTHER_TOKEN, f"{mode}-d") as someone:
            decision = await granted_read(rig, someone, "echo", later)
            elsewhere = await asks(someone, "other", later)
    finally:  # it would cover the other tests' reads of notes on echo
        async with approver(rig) as api:
            revoked = await api.post(f"/api/grants/{grant}/revoke")
        assert revoked.status_code == 200, revoked.text

    assert decision == {"effect": "ask", "rule_id": "notes-held", "grant": grant}
    assert elsewhere, "a grant made on server echo covers no read on server other"
