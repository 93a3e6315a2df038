"""``oauth`` mode over the stdio face (issue 27), both eras: each ``lockgate stdio`` process
serves one agent; their connect links and ``/oauth/callback`` are those of the ``lockgate
serve`` replica of the same config (``auth.public_url``), which shares the vault and the
approvals store (one SQLite file). The config is the plain one, without
``approvals.request_state_key``: the links are sealed with a key derived from the vault's, so
the replica opens the links the stdio gateways hand out.

Bob connects through the replica's REST API (what ``lockgate connections connect`` does); Alice's
call on her stdio gateway is held with a connect link, which her browser (Chromium) follows to
oidc-provider and back to the replica's callback; her re-issued call then runs, once, as her,
and Bob's stdio gateway reaches the upstream as him."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from connect_support import link_of
from credentials_support import AGENTS, every_log_line, vault_keys
from gateway_faces import LEGACY, MODERN
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from oauth import USERS, Provider, Upstream, browser_login, oidc_provider
from oauth_gateway import ALICE, BOB, connect, leaks, oauth_config, oauth_server, served, tokens_of
from support import MODES, free_port

PORT = free_port()
CALLBACK = f"http://127.0.0.1:{PORT}/oauth/callback"
TOOL = "notes__whoami"
pytestmark = pytest.mark.timeout(300)  # Chromium, two stdio gateways, and npm on a cold cache


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, redirect_uris=[CALLBACK]) as running:
        yield running


class Relisted:
    """A message handler: ``changed`` is set by each ``tools/list_changed`` notification."""

    def __init__(self) -> None:
        self.changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changed.set()


@dataclass
class Opener:
    """A user at an MCP client that declared URL-mode elicitation: each link it is sent, Alice
    opens in Chromium (login and consent at the provider), then accepts."""

    landed: list[str] = field(default_factory=list)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.landed.append(await browser_login(params.url, "alice", USERS["alice"]))
        return types.ElicitResult(action="accept")


@contextlib.asynccontextmanager
async def stdio_agent(
    config: Path, principal: str, mode: str, opener: Opener | None = None
) -> AsyncIterator[Client]:
    """``lockgate stdio -c CONFIG`` as ``principal`` (its token in ``$LOCKGATE_TOKEN``), once
    it lists the ``notes`` tools: the gateway learns them in the background at start, through a
    connected principal's grant, and tells the client with ``tools/list_changed``. Its log
    (standard error) is kept in `stdio_log`."""
    env = {**os.environ, "LOCKGATE_TOKEN": AGENTS[principal]}
    env["STDIO_LOG"] = str(stdio_log(config, principal))
    launch = 'exec "$0" -m gateway.cli stdio -c "$1" 2>>"$STDIO_LOG"'
    server = StdioServerParameters(
        command="/bin/sh",
        args=["-c", launch, sys.executable, str(config)],
        env=env,
        cwd=str(config.parent),
    )
    relisted = Relisted()
    async with Client(
        server,
        mode=mode,
        read_timeout_seconds=60,
        message_handler=relisted,
        elicitation_callback=opener,
    ) as client:
        assert client.protocol_version == (LEGACY if mode == "legacy" else MODERN)
        await _listed(client, relisted)
        yield client


def stdio_log(config: Path, principal: str) -> Path:
    """Where `stdio_agent` keeps the log of ``principal``'s stdio gateway."""
    return config.parent / f"stdio-{principal.replace(':', '-')}.log"


async def _lists_notes(client: Client) -> bool:
    return TOOL in {tool.name for tool in (await client.list_tools()).tools}


async def _listed(client: Client, relisted: Relisted) -> None:
    """Return once ``client`` lists ``TOOL``, listing again each time it is told the list
    changed (2026-07-28: by its ``subscriptions/listen`` stream)."""
    if client.protocol_version == MODERN:
        async with client.listen(tools_list_changed=True) as subscription:
            changes = aiter(subscription)
            while not await _lists_notes(client):
                await anext(changes)
        return
    while not await _lists_notes(client):
        await relisted.changed.wait()
        relisted.changed = anyio.Event()


def _structured(result: Any) -> Any:
    assert not result.is_error, result
    return result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_stdio_agents_connect_through_the_replica_and_each_is_seen_as_themselves(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    servers = [oauth_server(upstream.url)]
    with vault_keys(), every_log_line() as logs, anyio.fail_after(240):
        config = oauth_config(tmp_path, servers, port=PORT)
        async with served(config, PORT) as (gateway, base):
            pages = [await connect(base, BOB)]
            async with stdio_agent(config, ALICE, mode) as alice:
                held = await alice.call_tool(TOOL, {})
                link = link_of(held)
                assert link.startswith(f"{base}/connect/"), link
                pages.append(await browser_login(link, "alice", USERS["alice"]))
                assert pages[-1].startswith(f"{base}/oauth/callback?"), pages[-1]
                alice_is = _structured(await alice.call_tool(TOOL, {}))
            async with stdio_agent(config, BOB, mode) as bob:
                bob_is = _structured(await bob.call_tool(TOOL, {}))
            [record] = await gateway.parts.approvals.store.list(kind="connect")
            tokens = [*await tokens_of(gateway, ALICE), *await tokens_of(gateway, BOB)]
    assert (alice_is["sub"], bob_is["sub"]) == ("alice", "bob")
    assert alice_is["aud"] == upstream.url
    assert (record.principal, record.state) == (ALICE, "done")
    stdio_logs = [stdio_log(config, p).read_text() for p in (ALICE, BOB)]
    assert "upstream notes is up" in stdio_logs[0]  # what the grep below reads
    assert not leaks({*tokens, *upstream.seen.tokens}, config, logs.lines, stdio_logs, pages)


@pytest.mark.parametrize("mode", MODES)
async def test_a_stdio_agent_sent_the_link_by_elicitation_connects_and_its_held_call_runs(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    """The held call waits while Alice connects through the replica (2025-11-25: the link by
    ``elicitation/create``; 2026-07-28: in an ``InputRequiredResult``), then answers as her."""
    opener = Opener()
    with vault_keys(), anyio.fail_after(240):
        config = oauth_config(tmp_path, [oauth_server(upstream.url)], port=PORT)
        async with served(config, PORT) as (gateway, base):
            await connect(base, BOB)
            async with stdio_agent(config, ALICE, mode, opener) as alice:
                alice_is = _structured(await alice.call_tool(TOOL, {}))
            [record] = await gateway.parts.approvals.store.list(kind="connect")
    [landed] = opener.landed
    assert landed.startswith(f"{base}/oauth/callback?"), landed
    assert alice_is["sub"] == "alice"
    assert (record.principal, record.state) == (ALICE, "done")
