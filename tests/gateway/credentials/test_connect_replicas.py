"""Gaps of the connect gate (issue 27): the state of a held connect record is read from the
store on every replica, and a held call that raises ends ``failed`` at once."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
from connect_support import (
    SERVER,
    TOOL,
    connect_config,
    counting_upstream,
    follow,
    link_of,
    new_port,
    served,
)
from credentials_support import APPROVER, SECRETS, rest, vault_keys
from mcp.server.mcpserver import MCPServer
from pg_support import fresh_schema, pg_storage
from support import serve_asgi

from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal

ALICE, BOB = "agent:alice", "agent:bob"
KEY_VAR = "LOCKGATE_TEST_CONNECT_REPLICA_KEY"


def _as(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))


@contextlib.contextmanager
def links_key() -> Iterator[None]:
    os.environ[KEY_VAR] = os.urandom(32).hex()
    try:
        yield
    finally:
        os.environ.pop(KEY_VAR, None)


APPROVALS = {"store": "sqlite", "path": "pending.db", "request_state_key": f"env:{KEY_VAR}"}


async def test_a_record_connected_on_one_replica_is_done_when_reissued_on_a_busy_other(
    tmp_path: Path,
) -> None:
    """Replica B served calls (and looked at the store) before alice's call was held on A:
    her re-issued call on B still claims the record, runs once, and leaves it ``done``."""
    port_a, port_b = new_port(), new_port()
    async with fresh_schema() as schema:
        with links_key(), vault_keys(), anyio.fail_after(180):
            async with counting_upstream() as (url, counted):
                storage = pg_storage(schema)
                (tmp_path / "a").mkdir()
                (tmp_path / "b").mkdir()
                config_a = connect_config(
                    tmp_path / "a", url, port_a, approvals=APPROVALS, storage=storage
                )
                config_b = connect_config(
                    tmp_path / "b", url, port_b, approvals=APPROVALS, storage=storage
                )
                async with served(config_a, port_a) as (one, _):
                    assert one.parts.vault is not None  # the catalogue is listed as bob
                    await one.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                    async with served(config_b, port_b) as (two, _):
                        await _held_on_one_reissued_on_two(one, two)
    assert counted.calls == [f"Bearer {SECRETS[BOB]}"] + [f"Bearer {SECRETS[ALICE]}"] * 2


@contextlib.asynccontextmanager
async def blocking_upstream(started: anyio.Event) -> AsyncIterator[str]:
    """An MCP server whose ``whoami`` signals ``started`` and never answers."""
    server = MCPServer("web", version="1.0", log_level="WARNING")

    @server.tool()
    async def whoami() -> str:
        """Never answers."""
        started.set()
        await anyio.Event().wait()
        return "never"

    async with serve_asgi(server.streamable_http_app(host="127.0.0.1")) as base:
        yield f"{base}/mcp"


async def test_a_held_call_that_raises_ends_failed_at_once(tmp_path: Path) -> None:
    """The re-issued call is cancelled while the upstream runs it: its record is ``failed``
    at once (not ``executing`` until a restart's recovery)."""
    port, started = new_port(), anyio.Event()
    with links_key(), vault_keys(), anyio.fail_after(120):
        async with blocking_upstream(started) as url:
            config = connect_config(tmp_path, url, port, approvals=APPROVALS)
            async with served(config, port) as (gateway, _):
                assert gateway.parts.vault is not None  # the catalogue is listed as bob
                await gateway.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                held = await gateway.call_tool(TOOL, {}, _as(ALICE))
                connected = await follow(link_of(held), SECRETS[ALICE])
                assert connected.status_code == 200, connected.text
                async with anyio.create_task_group() as group:
                    group.start_soon(gateway.call_tool, TOOL, {}, _as(ALICE))
                    await started.wait()
                    group.cancel_scope.cancel()
                [record] = await gateway.parts.approvals.store.list(kind="connect")
                assert record.state == "failed"
                assert record.error is not None
                assert "Cancelled" in record.error


async def _held_on_one_reissued_on_two(one: Gateway, two: Gateway) -> None:
    assert two.parts.vault is not None  # two lists its catalogue as bob
    await two.parts.vault.set(SERVER, BOB, SECRETS[BOB])
    assert not (await two.call_tool(TOOL, {}, _as(BOB))).is_error  # two looked at the store
    held = await one.call_tool(TOOL, {}, _as(ALICE))
    connected = await follow(link_of(held), SECRETS[ALICE])
    assert connected.status_code == 200, connected.text
    store = two.parts.approvals.store
    [record] = await store.list(kind="connect")
    assert record.state == "approved"
    ran = await two.call_tool(TOOL, {}, _as(ALICE))
    assert not ran.is_error, ran
    done = await store.get(record.id)
    assert done is not None
    assert done.state == "done"
    again = await two.call_tool(TOOL, {}, _as(ALICE))  # a plain call now
    assert not again.is_error, again


async def test_an_expired_connect_record_is_a_credential_failure_not_an_approval(
    tmp_path: Path,
) -> None:
    """The expiry sweep finds a held connect record overdue: it is announced as
    ``credential.failed`` (reason ``expired``), never as ``tool.approval.resolved``."""
    port = new_port()
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, _counted):
            config = connect_config(tmp_path, url, port)
            async with (
                served(config, port) as (gateway, _),
                gateway.parts.events.bus.subscribe(
                    ["credential.*", "tool.approval.*"], buffer=100
                ) as events,
            ):
                assert gateway.parts.vault is not None  # the catalogue is listed as bob
                await gateway.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                held = await gateway.call_tool(TOOL, {}, _as(ALICE))
                assert held.is_error
                store = gateway.parts.approvals.store
                [record] = await store.list(kind="connect")
                [expired] = await store.sweep_expired(now=record.expires_at + 1)
                assert (expired.id, expired.state) == (record.id, "expired")
                published = events.ready(100)
    kinds = [e.type for e in published]
    assert "tool.approval.resolved" not in kinds
    [failed] = [e for e in published if e.type == "credential.failed"]
    assert failed.data["reason"] == "expired"
    assert (failed.data["pending_id"], failed.data["server"]) == (record.id, SERVER)
    assert failed.data["principal"] == ALICE


async def test_an_approver_lists_its_own_connect_records_and_nobody_elses(
    tmp_path: Path,
) -> None:
    """``GET /api/approvals?kind=connect`` answers (it was refused) with the caller's own held
    connect records only: another user's stays hidden, and is not to be decided."""
    port = new_port()
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, _counted):
            config = connect_config(tmp_path, url, port)
            async with served(config, port) as (gateway, base), rest(base, APPROVER) as api:
                assert gateway.parts.vault is not None  # the catalogue is listed as bob
                await gateway.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                assert (await gateway.call_tool(TOOL, {}, _as(ALICE))).is_error
                assert (await gateway.call_tool(TOOL, {}, _as(APPROVER))).is_error
                listed = await api.get("/api/approvals", params={"kind": "connect"})
                assert listed.status_code == 200, listed.text
                [own] = listed.json()["items"]
                assert (own["principal"], own["kind"]) == (APPROVER, "connect")
                everything = await api.get("/api/approvals", params={"state": "pending"})
                ids = [item["id"] for item in everything.json()["items"]]
                store = gateway.parts.approvals.store
                [alices] = await store.list(kind="connect", principal=ALICE)
                assert alices.id not in ids
                decided = await api.post(
                    f"/api/approvals/{alices.id}/decision", json={"decision": "approve"}
                )
                assert decided.status_code == 404, decided.text


async def test_a_credential_redacting_results_inspector_leaves_the_connect_link_to_the_caller(
    tmp_path: Path,
) -> None:
    """The held call's link is the caller's to open: an inspector redacting credentials in
    results does not hide it (events and the audit log still mask it)."""
    inspector = {"type": "builtin", "detectors": ["credential"], "direction": "results"}
    port = new_port()
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, _counted):
            config = connect_config(tmp_path, url, port, inspectors={"secrets": inspector})
            async with served(config, port) as (gateway, _):
                assert gateway.parts.vault is not None  # the catalogue is listed as bob
                await gateway.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                held = await gateway.call_tool(TOOL, {}, _as(ALICE))
                link = link_of(held)
                text = " ".join(getattr(block, "text", "") for block in held.content)
                assert link in text, text
                connected = await follow(link, SECRETS[ALICE])
                assert connected.status_code == 200, connected.text
