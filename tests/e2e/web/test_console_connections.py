"""The operator console's Connections section (Debian chromium driven by Playwright): who has
registered a credential for which per-caller server, read from ``/api/connections/all``, never
the credential; a gateway with the vault and a server in ``secret`` mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from credentials_support import AGENTS, SECRETS, credentials_config, rest, secret_stdio, vault_keys
from playwright.async_api import Browser, expect
from support import serve_asgi
from web_support import Site, new_page, screenshot

from gateway import Gateway
from gateway.http.app import build_app

OPERATOR_TOKEN = "connections-operator-token"


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    operator = {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator"]}
    with vault_keys():
        auth = {"agents": agents, "approvers": [operator]}
        config = credentials_config(tmp_path, [secret_stdio("local")], auth=auth)
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as url:
            yield Site(url, gateway)


async def test_an_operator_sees_who_is_connected_to_what_and_never_the_secret(
    browser: Browser, site: Site
) -> None:
    async with rest(site.url, "agent:alice") as alice:
        put = await alice.put("/api/connections/local", json={"secret": SECRETS["agent:alice"]})
        assert put.status_code == 200, put.text
    async with new_page(browser, width=390) as page:
        await page.goto(f"{site.url}/console")
        await page.fill("#token", OPERATOR_TOKEN)
        await page.click("#login button")
        await expect(page.locator("#status")).to_have_text("Signed in as user:olga (operator)")
        await page.locator('#sections a[href="#connections"]').click()
        item = page.locator("#connection-list li")
        await expect(item).to_have_count(1)
        await expect(item.locator("h3")).to_have_text("local · agent:alice")
        await expect(item).to_contain_text("connection ")
        await screenshot(page, "console-connections.png")
        html = await page.content()
    assert SECRETS["agent:alice"] not in html
