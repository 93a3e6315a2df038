"""A held call to an ``oauth`` server: its connect link sends the browser on to the
authorization server (oidc-provider, Chromium), the gateway's ``/oauth/callback`` connects the
account, and the re-issued call runs once, as that user; the link is spent by then."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from connect_support import link_of
from credentials_support import AGENTS, vault_keys
from oauth import USERS, Provider, Upstream, browser_login, oidc_provider
from oauth_gateway import ALICE, BOB, connect, oauth_config, oauth_server, served
from support import free_port, mcp_http_client

PORT = free_port()
TOOL = "notes__whoami"


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    callback = f"http://127.0.0.1:{PORT}/oauth/callback"
    async with oidc_provider(tmp_path_factory, redirect_uris=[callback]) as running:
        yield running


async def test_the_link_of_an_oauth_server_connects_at_the_authorization_server(
    tmp_path: Path, upstream: Upstream
) -> None:
    with vault_keys(), anyio.fail_after(180):
        config = oauth_config(tmp_path, [oauth_server(upstream.url)], port=PORT)
        async with (
            served(config, PORT) as (gateway, base),
            mcp_http_client(f"{base}/mcp", "legacy", AGENTS[ALICE]) as alice,
        ):
            await connect(base, BOB)  # someone connected: the server's tools are listed
            held = await alice.call_tool(TOOL, {})
            assert "lockgate connections connect notes" in held.content[0].text  # type: ignore[union-attr]
            link = link_of(held)
            await browser_login(link, "alice", USERS["alice"])  # link -> login -> callback
            record = (await gateway.parts.approvals.store.list(kind="connect"))[0]
            assert record.state == "approved"
            ran = await alice.call_tool(TOOL, {})
            assert not ran.is_error, ran
            assert ran.structured_content is not None
            assert ran.structured_content["sub"] == "alice"
            done = await gateway.parts.approvals.store.get(record.id)
            assert done is not None
            assert done.state == "done"
            async with httpx2.AsyncClient(timeout=60) as browser:
                again = await browser.get(link)
            assert again.status_code == 410  # spent
