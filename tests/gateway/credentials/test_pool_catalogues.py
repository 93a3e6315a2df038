"""Per-principal catalogues: a server in secret mode whose tools differ by caller (the test
upstream ``pool_server.py`` lists what its process's secret allows) serves each agent the
catalogue its own connection listed, over HTTP in both MCP eras; the definitions the two see of
one tool are pinned each on its own, so listing as one never flips the other's pin."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from credentials_support import AGENTS, APPROVER, credentials_config, rest, vault_keys
from mcp import Client
from support import MODES, mcp_http_client, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import CallContext, Principal

ALICE, BOB = "agent:alice", "agent:bob"
POOL_SERVER = str(Path(__file__).resolve().parent / "pool_server.py")
PLAIN, WIDE = "plain-alice", "wide-admin-bob"
"""Alice's secret lists the plain catalogue; Bob's adds ``purge`` and a ``limit`` argument."""


def pool_server(name: str = "pool") -> dict[str, Any]:
    return {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": [POOL_SERVER, "POOL_SECRET"],
        "credentials": {"mode": "secret", "env": "POOL_SECRET"},
    }


@contextlib.asynccontextmanager
async def _served(tmp_path: Path, **extra: Any) -> AsyncIterator[tuple[Gateway, str]]:
    with vault_keys():
        gateway = Gateway.from_config(credentials_config(tmp_path, [pool_server()], **extra))
        async with serve_asgi(build_app(gateway)) as base:
            yield gateway, base


async def _connect(base: str, principal: str, secret: str) -> None:
    async with rest(base, principal) as api:
        put = await api.put("/api/connections/pool", json={"secret": secret})
    assert put.status_code == 200, put.text


async def _listed(client: Client) -> dict[str, list[str]]:
    """Each tool's argument names, by exposed name."""
    tools = (await client.list_tools()).tools
    return {t.name: sorted(t.input_schema.get("properties", {})) for t in tools}


PLAIN_TOOLS = {"pool__whoami": [], "pool__lookup": ["query"]}
WIDE_TOOLS = {"pool__whoami": [], "pool__lookup": ["limit", "query"], "pool__purge": []}


@pytest.mark.parametrize("mode", MODES)
async def test_each_agent_lists_and_calls_the_catalogue_its_own_connection_listed(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(120):
        # about catalogues, not review: a definition of one's own is served at once
        async with _served(tmp_path, pins={"on_change": "warn"}) as (_, base):
            await _connect(base, ALICE, PLAIN)
            await _connect(base, BOB, WIDE)  # the latest connection: it must not win for alice
            mcp = f"{base}/mcp"
            async with (
                mcp_http_client(mcp, mode, AGENTS[ALICE]) as alice,
                mcp_http_client(mcp, mode, AGENTS[BOB]) as bob,
            ):
                seen = {"alice": await _listed(alice), "bob": await _listed(bob)}
                seen["alice again"] = await _listed(alice)
                purged = await bob.call_tool("pool__purge", {})
                looked = await bob.call_tool("pool__lookup", {"query": "q", "limit": 2})
    assert seen == {"alice": PLAIN_TOOLS, "bob": WIDE_TOOLS, "alice again": PLAIN_TOOLS}
    assert purged.content[0].text == f"{WIDE}: purged"
    assert looked.content[0].text == f"{WIDE}: q (at most 2)"


async def _names(gateway: Gateway, principal: str) -> set[str]:
    ctx = CallContext(principal=Principal(id=principal))
    return set(await gateway.tools(ctx))


async def test_two_definitions_of_one_tool_are_pinned_each_on_its_own_and_neither_flips(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(120):
        async with (
            _served(tmp_path) as (gateway, base),
            gateway.events.subscribe(["tool.pin_*"], buffer=1000) as events,
        ):
            await _connect(base, ALICE, PLAIN)
            await _connect(base, BOB, WIDE)
            before = {who: await _names(gateway, who) for who in (ALICE, BOB, ALICE, BOB)}
            held = await gateway.pins.list()
            waiting = [(p.name, p.changed_pin) for p in held]
            assert len(waiting) == 1, waiting
            approver = Principal(id=APPROVER)
            await gateway.pins.accept(waiting[0][0], pin=str(waiting[0][1]), by=approver)
            after = {}
            for who in (BOB, ALICE, BOB, ALICE):
                after[who] = await _names(gateway, who)
            pins = await gateway.pins.list(everything=True)
            published = events.ready(1000)
    changes = [e.data["name"] for e in published if e.type == "tool.pin_changed"]
    accepted = {(p.tool.split("#")[0], p.accepted_by) for p in pins}
    lookup = "pool__lookup"
    assert before[ALICE] == {"pool__whoami", lookup}
    assert before[BOB] == {"pool__whoami", "pool__purge"}  # his definition waits for review
    assert waiting[0][0].startswith(f"{lookup}#")
    assert after == {ALICE: {"pool__whoami", lookup}, BOB: {"pool__whoami", lookup, "pool__purge"}}
    assert changes == [waiting[0][0]]  # one change, once: no pin flipped back and forth
    assert ("lookup", "first-use") in accepted
    assert ("lookup", APPROVER) in accepted
