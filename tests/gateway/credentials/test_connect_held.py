"""Connecting is a held call: a call to a per-caller server its caller has not connected is held
in a ``connect`` record (durable, on record as ``credential.required``) and answered with a
single-use link; the link's form stores the secret once (a second use is refused, an expired link
too); the re-issued call then runs exactly once, as the caller. A client that declared URL-mode
elicitation is sent the link instead, and its call completes once connected. Both MCP eras."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from connect_support import (
    TOOL,
    Opener,
    connect_config,
    counting_upstream,
    follow,
    link_of,
    new_port,
    opening_client,
    served,
)
from credentials_support import AGENTS, SECRETS, audit_bytes, rest, vault_keys
from support import MODES, mcp_http_client

from toolsets.context import CallContext, Principal

ALICE, BOB = "agent:alice", "agent:bob"


def _refusal(result: Any) -> dict[str, Any]:
    assert result.meta is not None
    refusal: dict[str, Any] = result.meta["lockgate/refusal"]
    return refusal


def _authorization(result: Any) -> str:
    assert not result.is_error, result
    return str(result.structured_content["authorization"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_before_connecting_is_held_and_runs_once_after_the_link(
    tmp_path: Path, mode: str
) -> None:
    port = new_port()
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, counted):
            config = connect_config(tmp_path, url, port)
            async with (
                served(config, port) as (gateway, base),
                gateway.parts.events.bus.subscribe(["credential.*"], buffer=100) as events,
                rest(base, BOB) as bob_api,
                mcp_http_client(f"{base}/mcp", mode, AGENTS[ALICE]) as alice,
            ):
                await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                store = gateway.parts.approvals.store

                held = await alice.call_tool(TOOL, {})
                refusal = _refusal(held)
                assert refusal["kind"] == "not_connected"
                assert "lockgate connections set web" in refusal["message"]
                link = link_of(held)
                record = await store.get(refusal["approvalId"])
                assert record is not None
                assert (record.kind, record.state) == ("connect", "pending")
                assert record.principal == ALICE
                again = await alice.call_tool(TOOL, {})  # re-issued before connecting: same hold
                assert _refusal(again)["approvalId"] == record.id
                assert counted.calls == []

                connected = await follow(link, SECRETS[ALICE])
                assert connected.status_code == 200, connected.text
                assert "Connected" in connected.text
                reused = await follow(link, "someone-elses-secret")  # the link works once
                assert reused.status_code == 410
                assert "used already" in reused.text
                assert (await store.get(record.id)).state == "approved"  # type: ignore[union-attr]

                ran = await alice.call_tool(TOOL, {})
                assert _authorization(ran) == f"Bearer {SECRETS[ALICE]}"
                assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]  # exactly once
                done = await store.get(record.id)
                assert done is not None
                assert (done.state, done.delivered) == ("done", True)
                await alice.call_tool(TOOL, {})  # later calls run as any other
                assert len(counted.calls) == 2
                published = events.ready(100)
    kinds = [e.type for e in published]
    assert kinds.count("credential.required") == 1
    required = next(e for e in published if e.type == "credential.required")
    assert required.data["pending_id"] == record.id
    assert required.data["server"] == "web"
    written = str([e.to_cloudevent() for e in published]).encode() + audit_bytes(config)
    token = link.rsplit("/", 1)[1]
    assert token.encode() not in written  # the link is a credential: never on record
    assert b"credential.required" in audit_bytes(config)


async def test_an_expired_link_is_refused(tmp_path: Path) -> None:
    port = new_port()
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, counted):
            config = connect_config(tmp_path, url, port)
            async with (
                served(config, port) as (gateway, base),
                rest(base, BOB) as bob_api,
                mcp_http_client(f"{base}/mcp", "legacy", AGENTS[ALICE]) as alice,
            ):
                await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                held = await alice.call_tool(TOOL, {})
                pending_id = _refusal(held)["approvalId"]
                gate = gateway.parts.connect
                assert gate is not None
                past = gate.links.link(
                    pending_id=pending_id, principal=ALICE, server="web", expires_at=time.time() - 1
                )
                expired = await follow(past, SECRETS[ALICE])
                assert expired.status_code == 410
                assert "expired" in expired.text
                forged = await follow(link_of(held) + "x", SECRETS[ALICE])
                assert forged.status_code == 400
                record = await gateway.parts.approvals.store.get(pending_id)
                assert record is not None
                assert record.state == "pending"
                assert counted.calls == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_that_opens_links_is_sent_the_link_and_its_call_completes_once(
    tmp_path: Path, mode: str
) -> None:
    port = new_port()
    opener = Opener(SECRETS[ALICE])
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, counted):
            config = connect_config(tmp_path, url, port)
            async with (
                served(config, port) as (gateway, base),
                rest(base, BOB) as bob_api,
                opening_client(base, mode, ALICE, opener) as alice,
            ):
                await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                result = await alice.call_tool(TOOL, {})  # held, connected, then run
                assert _authorization(result) == f"Bearer {SECRETS[ALICE]}"
                assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]
                [asked] = opener.asked
                assert "/connect/" in asked.url
                assert "'web'" in asked.message
                assert [answer.status_code for answer in opener.answers] == [200]
                held = await gateway.parts.approvals.store.list(kind="connect")
                assert [(c.state, c.delivered) for c in held] == [("done", True)]
                if mode == "legacy":  # 2025-11-25 names the elicitation; 2026-07-28 does not
                    assert asked.elicitation_id == held[0].id


async def test_a_tenants_caller_connects_under_their_tenant(tmp_path: Path) -> None:
    port = new_port()
    acme = CallContext(principal=Principal(id=ALICE, tenant="acme"))
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, counted):
            config = connect_config(tmp_path, url, port)
            async with served(config, port) as (gateway, base), rest(base, BOB) as bob_api:
                await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                link = link_of(await gateway.call_tool(TOOL, {}, acme))
                assert (await follow(link, SECRETS[ALICE])).status_code == 200
                ran = await gateway.call_tool(TOOL, {}, acme)
                assert not ran.is_error, ran
                assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]
                vault = gateway.parts.vault
                assert vault is not None
                assert await vault.secret("web", ALICE) is None  # acme's alice, not the other
