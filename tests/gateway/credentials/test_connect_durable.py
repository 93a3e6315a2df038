"""A held connect record survives a gateway restart (SQLite), and is shared by replicas on
PostgreSQL: the link handed out before still connects (the links' key is configured), and the
re-issued call runs once. Policies read
``principal.connections``: a rule hides a server's tools from callers who have not connected it,
and they show once the caller connects."""

from __future__ import annotations

import os
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
from credentials_support import SECRETS, rest, vault_keys
from pg_support import fresh_schema, pg_storage

from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal

ALICE, BOB = "agent:alice", "agent:bob"
KEY_VAR = "LOCKGATE_TEST_CONNECT_STATE_KEY"
HIDE_UNCONNECTED = """\
version: 1
rules:
  - id: hide-unconnected
    servers: [web]
    unless: 'principal.connections.exists(s, s == "web")'
    effect: hide
    reason: connect web first
"""


def _as(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))


async def test_a_held_connect_record_and_its_link_survive_a_restart(tmp_path: Path) -> None:
    port = new_port()
    os.environ[KEY_VAR] = os.urandom(32).hex()
    approvals = {"store": "sqlite", "path": "pending.db", "request_state_key": f"env:{KEY_VAR}"}
    try:
        with vault_keys(), anyio.fail_after(120):
            async with counting_upstream() as (url, counted):
                config = connect_config(tmp_path, url, port, approvals=approvals)
                async with served(config, port) as (gateway, base), rest(base, BOB) as bob_api:
                    await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                    held = await gateway.call_tool(TOOL, {}, _as(ALICE))
                    link = link_of(held)
                async with served(config, port) as (gateway, base):  # a new process, same files
                    store = gateway.parts.approvals.store
                    [record] = await store.list(kind="connect")
                    assert (record.state, record.principal) == ("pending", ALICE)
                    connected = await follow(link, SECRETS[ALICE])
                    assert connected.status_code == 200, connected.text
                    result = await gateway.call_tool(TOOL, {}, _as(ALICE))
                    assert not result.is_error, result
                    assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]  # once, as alice
                    done = await store.get(record.id)
                    assert done is not None
                    assert done.state == "done"
    finally:
        os.environ.pop(KEY_VAR, None)


async def test_a_policy_hides_the_tools_of_servers_the_caller_has_not_connected(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.yaml").write_text(HIDE_UNCONNECTED, encoding="utf-8")
    policies = {"files": ["policy.yaml"], "default_effect": "allow"}
    with vault_keys(), anyio.fail_after(120):
        async with counting_upstream() as (url, _counted):
            config = connect_config(tmp_path, url, new_port(), policies=policies)
            async with Gateway.from_config(config) as gateway:
                vault = gateway.parts.vault
                assert vault is not None
                await vault.set(SERVER, BOB, SECRETS[BOB])
                bob = [t.name for t in await gateway.list_tools(_as(BOB))]
                alice = [t.name for t in await gateway.list_tools(_as(ALICE))]
                assert TOOL in bob
                assert TOOL not in alice
                await vault.set(SERVER, ALICE, SECRETS[ALICE])
                alice = [t.name for t in await gateway.list_tools(_as(ALICE))]
                assert TOOL in alice  # connected: shown at once
                await vault.revoke(SERVER, ALICE, by=ALICE)
                alice = [t.name for t in await gateway.list_tools(_as(ALICE))]
                assert TOOL not in alice


async def test_a_call_held_on_one_replica_connects_and_runs_once_on_another_postgres(
    tmp_path: Path,
) -> None:
    first_port, second_port = new_port(), new_port()
    os.environ[KEY_VAR] = os.urandom(32).hex()
    approvals = {"store": "sqlite", "path": "pending.db", "request_state_key": f"env:{KEY_VAR}"}
    try:
        async with fresh_schema() as schema:
            with vault_keys(), anyio.fail_after(120):
                async with counting_upstream() as (url, counted):
                    storage = pg_storage(schema)
                    first = connect_config(
                        tmp_path, url, first_port, approvals=approvals, storage=storage
                    )
                    async with Gateway.from_config(first) as one:
                        assert one.parts.vault is not None
                        await one.parts.vault.set(SERVER, BOB, SECRETS[BOB])
                        held = await one.call_tool(TOOL, {}, _as(ALICE))
                    link = link_of(held)  # names the first replica: open it on the second
                    second_link = link.replace(str(first_port), str(second_port), 1)
                    second = connect_config(
                        tmp_path, url, second_port, approvals=approvals, storage=storage
                    )
                    async with served(second, second_port) as (two, _base):
                        connected = await follow(second_link, SECRETS[ALICE])
                        assert connected.status_code == 200, connected.text
                        ran = await two.call_tool(TOOL, {}, _as(ALICE))
                        assert not ran.is_error, ran
                        [record] = await two.parts.approvals.store.list(kind="connect")
                        assert record.state == "done"
                    assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]
                    assert not (tmp_path / "pending.db").exists()  # held in PostgreSQL
    finally:
        os.environ.pop(KEY_VAR, None)
