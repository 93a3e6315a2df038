"""Secret mode on PostgreSQL: a secret set through one gateway is used by another on the same
database (a replica, or the same gateway after a restart), which lists the server's tools at
start through the first connected principal, without any call."""

from __future__ import annotations

from pathlib import Path

import anyio
from credentials_support import SECRETS, credentials_config, secret_stdio, vault_keys
from pg_support import fresh_schema, pg_storage

from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal

ALICE, BOB = "agent:alice", "agent:bob"


def _as(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))


async def test_a_secret_set_on_one_gateway_is_used_by_another_on_the_same_database(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as schema:
        with vault_keys():
            config = credentials_config(
                tmp_path, [secret_stdio("local")], storage=pg_storage(schema)
            )
            async with Gateway.from_config(config) as first:
                assert first.parts.vault is not None
                await first.parts.vault.set("local", ALICE, SECRETS[ALICE])
            second = Gateway.from_config(config)
            bus = second.parts.events.bus
            async with bus.subscribe(["tools.changed"]) as changes, second:
                with anyio.fail_after(60):  # listed at start, through alice's connection
                    while "local__whoami" not in await second.tools(_as(BOB)):
                        await changes.__anext__()
                alice = await second.call_tool("local__whoami", {}, _as(ALICE))
                bob = await second.call_tool("local__whoami", {}, _as(BOB))
    assert alice.structured_content["value"] == SECRETS[ALICE]
    assert bob.meta["lockgate/refusal"]["kind"] == "not_connected"
