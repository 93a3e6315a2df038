"""The operator console lists an ``oauth`` server as a principal without connecting as them: on
a gateway that has no catalogue of the server yet (a replica nobody listed it on), a principal
whose grant is in the shared vault (connected on the other gateway) is shown what is known,
with the note, and the upstream sees no request with their token; their own listing afterwards
still opens their connection and lists through it. Both eras for their listing.

Real parts: oidc-provider, login and consent in Chromium, the protected upstream, two gateways
under uvicorn on one SQLite store, `mcp.Client`, the REST API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from credentials_support import (
    AGENTS,
    APPROVER,
    APPROVER_TOKEN,
    per_principal_pool,
    rest,
    vault_keys,
)
from oauth import Provider, Upstream, oidc_provider
from oauth_gateway import ALICE, SERVER, connect, oauth_config, oauth_server, served
from support import MODES, free_port, mcp_http_client

from toolsets.context import CallContext, Principal
from toolsets.upstream.per_principal import principal_key


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(tmp_path_factory) as running:  # the gateway registers itself
        yield running


def _config(directory: Path, upstream: Upstream, port: int, store: Path) -> Path:
    """A gateway on ``port`` whose vault is in ``store``, the approver an operator."""
    directory.mkdir()
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    operator = {"id": APPROVER, "token": APPROVER_TOKEN, "roles": ["operator"]}
    auth = {"agents": agents, "approvers": [operator], "public_url": f"http://127.0.0.1:{port}"}
    approvals = {"store": "sqlite", "path": str(store)}
    servers = [oauth_server(upstream.url)]
    return oauth_config(directory, servers, port=port, auth=auth, approvals=approvals)


def _requests_of(upstream: Upstream, user: str) -> int:
    """How many requests the upstream accepted with ``user``'s token."""
    return sum(1 for claims in upstream.seen.claims if claims.get("sub") == user)


async def _console(base: str, principal: str) -> dict[str, Any]:
    async with rest(base, APPROVER) as console:
        listed = await console.get("/api/console/catalogue", params={"principal": principal})
    assert listed.status_code == 200, listed.text
    body: dict[str, Any] = listed.json()
    return body


@pytest.mark.parametrize("mode", MODES)
async def test_the_console_lists_an_oauth_server_as_a_principal_without_connecting_as_them(
    tmp_path: Path, upstream: Upstream, mode: str
) -> None:
    port_one, port_two = free_port(), free_port()
    store = tmp_path / "pending.db"
    config_one = _config(tmp_path / "one", upstream, port_one, store)
    config_two = _config(tmp_path / "two", upstream, port_two, store)
    alice = principal_key(Principal(id=ALICE))
    with vault_keys(), anyio.fail_after(240):
        async with served(config_two, port_two) as (two, base_two):
            # The pool's own listing waits for its listing at start (nobody had connected yet).
            await per_principal_pool(two).get_tools(CallContext())
            async with served(config_one, port_one) as (_one, base_one):
                await connect(base_one, ALICE)  # her grant in the vault the two share
            pool = per_principal_pool(two)
            unknown = (dict(pool.catalogues.common), alice in pool.entries)
            before = _requests_of(upstream, "alice")

            inspected = await _console(base_two, ALICE)
            inspecting = (_requests_of(upstream, "alice") - before, alice in pool.entries)

            async with mcp_http_client(f"{base_two}/mcp", mode, AGENTS[ALICE]) as client:
                listed = sorted(tool.name for tool in (await client.list_tools()).tools)
            her_own = (_requests_of(upstream, "alice") - before, alice in pool.entries)
            known = _requests_of(upstream, "alice")
            inspected_after = await _console(base_two, ALICE)
            unchanged = _requests_of(upstream, "alice") == known
    assert unknown == ({}, False)  # no catalogue on two: nobody listed it there
    assert inspecting == (0, False)  # no request with her token, no connection as her
    assert inspected["items"] == []  # nothing known yet
    assert inspected["note"].startswith(f"'{SERVER}': each caller's own connection")
    assert "the console opens no connection as them" in inspected["note"]
    assert her_own[0] > 0  # her own listing opened her connection
    assert her_own[1]
    assert f"{SERVER}__whoami" in listed
    assert f"{SERVER}__whoami" in [tool["name"] for tool in inspected_after["items"]]
    assert unchanged  # the last known, read without a request
