"""Where an identity provider is configured (``connect.signin``), a connect link first signs the
browser in (OpenID Connect, oidc-provider from npm, Chromium) and does something only for the
principal it was made for: opened by another signed-in user it is refused; opened by its own
user it connects, and the re-issued call runs once. The signed-in user's Connections page lists
only their own connections and revokes them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from connect_support import TOOL, connect_config, counting_upstream, link_of, served
from credentials_support import AGENTS, SECRETS, rest, vault_keys
from oauth import (
    CLIENT_ID,
    CLIENT_SECRET,
    USERS,
    Provider,
    browser_login,
    chromium,
    new_page,
    oidc_provider,
)
from playwright.async_api import Page
from support import free_port, mcp_http_client

ALICE, BOB = "agent:alice", "agent:bob"
PORT = free_port()
SECRET_VAR = "LOCKGATE_TEST_SIGNIN_SECRET"


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    callback = f"http://127.0.0.1:{PORT}/connect/signin/callback"
    async with oidc_provider(tmp_path_factory, redirect_uris=[callback]) as running:
        yield running


@pytest.fixture
def client_secret() -> Iterator[str]:
    os.environ[SECRET_VAR] = CLIENT_SECRET
    yield f"env:{SECRET_VAR}"
    os.environ.pop(SECRET_VAR, None)


async def _signed_in(page: Page, url: str, user: str) -> int:
    """Open ``url`` in ``page``, signing ``user`` in at the provider on the way; the status of
    the gateway's answer at ``url`` once back there."""
    statuses: dict[str, int] = {}
    page.on("response", lambda response: statuses.__setitem__(response.url, response.status))
    await page.goto(url)
    await browser_login(page, user, USERS[user])
    await page.wait_for_url(url)
    return statuses[url]


async def test_a_link_opened_by_another_signed_in_user_is_refused_and_works_for_its_own(
    tmp_path: Path, provider: Provider, client_secret: str
) -> None:
    signin = {"issuer": provider.issuer, "client_id": CLIENT_ID}
    signin |= {"client_secret": client_secret, "id_prefix": "agent:"}
    with vault_keys(), anyio.fail_after(180):
        async with counting_upstream() as (url, counted):
            config = connect_config(tmp_path, url, PORT, connect={"signin": signin})
            async with (
                served(config, PORT) as (_gateway, base),
                rest(base, BOB) as bob_api,
                mcp_http_client(f"{base}/mcp", "legacy", AGENTS[ALICE]) as alice,
                chromium() as browser,
            ):
                await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
                link = link_of(await alice.call_tool(TOOL, {}))
                async with new_page(browser) as bobs:  # bob signs in, then opens alice's link
                    assert await _signed_in(bobs, link, "bob") == 403
                    assert "belongs to another user" in await bobs.content()
                async with new_page(browser) as alices:
                    assert await _signed_in(alices, link, "alice") == 200
                    await alices.locator("input[name=secret]").fill(SECRETS[ALICE])
                    async with alices.expect_navigation():
                        await alices.locator("button[type=submit]").click()
                    assert "Connected" in await alices.content()
                    ran = await alice.call_tool(TOOL, {})
                    assert not ran.is_error, ran
                    assert counted.calls == [f"Bearer {SECRETS[ALICE]}"]  # once, as alice

                    await alices.goto(f"{base}/connections")  # signed in: her own only
                    row = alices.locator("#connections tr[data-server=web]")
                    assert "connected since" in await row.inner_text()
                    assert "agent:bob" not in await alices.content()
                    async with alices.expect_navigation():
                        await row.locator("button", has_text="Revoke").click()
                    assert "not connected" in await row.inner_text()
                    refused = await alice.call_tool(TOOL, {})
                    assert refused.is_error  # revoked: held for a new connect
                    assert len(counted.calls) == 1


async def test_a_browser_session_outlives_a_restart_of_the_gateway(
    tmp_path: Path, provider: Provider, client_secret: str
) -> None:
    """Sessions are signed with a key derived from the vault's (not a per-process one): after
    a restart, or on another replica with the same vault key, the browser is still signed in."""
    signin = {"issuer": provider.issuer, "client_id": CLIENT_ID}
    signin |= {"client_secret": client_secret, "id_prefix": "agent:"}
    with vault_keys(), anyio.fail_after(180):
        async with counting_upstream() as (url, _counted):
            config = connect_config(tmp_path, url, PORT, connect={"signin": signin})
            async with chromium() as browser, new_page(browser) as alices:
                async with served(config, PORT) as (_gateway, base):
                    assert await _signed_in(alices, f"{base}/connections", "alice") == 200
                    assert await alices.locator("#connections").count() == 1
                async with served(config, PORT) as (_gateway, base):  # a new process
                    asked: list[str] = []
                    alices.on("request", lambda request: asked.append(request.url))
                    answer = await alices.goto(f"{base}/connections")
                    assert answer is not None
                    assert answer.status == 200
                    assert f"{base}/connections" in asked
                    assert not [u for u in asked if u.startswith(provider.issuer)]  # not sent
                    assert await alices.locator("#connections").count() == 1
