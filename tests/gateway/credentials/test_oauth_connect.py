"""``oauth`` mode end to end (real parts only): two agents connect their own accounts at
oidc-provider (dynamic registration, PKCE, the resource indicator, login and consent in
Chromium, the gateway's ``/oauth/callback``) and each reaches the protected upstream as
themselves, in both MCP eras: its ``whoami`` sees two subjects, neither sees the other's notes;
no token reaches a log line, an event, the audit log or a page."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from credentials_support import every_log_line, vault_keys
from oauth import NOTES, Provider, Upstream, oidc_provider
from oauth_gateway import (
    ALICE,
    BOB,
    agents,
    connect,
    leaks,
    oauth_config,
    oauth_server,
    served,
    tokens_of,
)
from support import MODES, free_port

PORT = free_port()
CALLBACK = f"http://127.0.0.1:{PORT}/oauth/callback"


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory, redirect_uris=[CALLBACK]) as running:
        yield running


def _structured(result: Any) -> Any:
    assert not result.is_error, result
    return result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_two_agents_connect_their_own_accounts_and_each_is_seen_as_themselves(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    with vault_keys(), every_log_line() as logs:
        config = oauth_config(tmp_path, [oauth_server(upstream.url)], port=PORT)
        async with served(config, PORT) as (gateway, base):
            bus = gateway.parts.events.bus
            async with bus.subscribe(["*"], buffer=10_000) as events:
                pages = [await connect(base, ALICE), await connect(base, BOB)]
                async with agents(base, mode) as (alice, bob):
                    alice_is = _structured(await alice.call_tool("notes__whoami", {}))
                    bob_is = _structured(await bob.call_tool("notes__whoami", {}))
                    alice_notes = _structured(await alice.call_tool("notes__my_notes", {}))
                    bob_notes = _structured(await bob.call_tool("notes__my_notes", {}))
                tokens = [*await tokens_of(gateway, ALICE), *await tokens_of(gateway, BOB)]
                published = events.ready(10_000)
    assert (alice_is["sub"], bob_is["sub"]) == ("alice", "bob")
    assert alice_is["aud"] == upstream.url  # the resource indicator bound the token to it
    assert alice_notes == {"result": NOTES["alice"]}
    assert bob_notes == {"result": NOTES["bob"]}
    connected = [e.data for e in published if e.type == "credential.connected"]
    assert [(d["principal"], d["mode"]) for d in connected] == [(ALICE, "oauth"), (BOB, "oauth")]
    assert upstream.seen.tokens  # what the grep below looks for
    written = [json.dumps(e.to_cloudevent(), default=str) for e in published]
    assert not leaks({*tokens, *upstream.seen.tokens}, config, logs.lines, written, pages)
