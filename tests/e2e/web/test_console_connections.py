"""The operator console's Connections section (Debian chromium driven by Playwright): who has
registered a credential for which per-caller server, read from ``/api/connections/all``, never
the credential; a gateway with the vault and a server in ``secret`` mode."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from credentials_support import AGENTS, SECRETS, credentials_config, rest, secret_stdio, vault_keys
from playwright.async_api import Browser, expect
from support import serve_asgi
from web_support import Site, marker, new_page, open_console, screenshot

from gateway import Gateway
from gateway.http.app import build_app

OPERATOR_TOKEN = "connections-operator-token"
ACME_TOKEN = "connections-acme-operator-token"
CAROL_TOKEN = "carol-of-acme-agent-token"


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    agents.append({"id": "agent:carol", "token": CAROL_TOKEN, "tenant": "acme"})
    operator = {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator"]}
    tina = {"id": "user:tina", "token": ACME_TOKEN, "roles": ["operator"], "tenant": "acme"}
    with vault_keys():
        auth = {"agents": agents, "approvers": [operator, tina]}
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
        await open_console(page, site.url, OPERATOR_TOKEN)
        await expect(page.locator("#status")).to_have_text("Signed in as user:olga (operator)")
        await page.locator('#sections a[href="#connections"]').click()
        item = page.locator("#connection-list li")
        await expect(item).to_have_count(1)
        await expect(item.locator("h3")).to_have_text("local · agent:alice")
        await expect(item).to_contain_text("connection ")
        await screenshot(page, "console-connections.png")
        html = await page.content()
    assert SECRETS["agent:alice"] not in html


def _client(site: Site, token: str) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(base_url=site.url, headers=headers, timeout=60)


async def test_an_operator_sees_the_connections_of_its_own_tenant_only(site: Site) -> None:
    async with rest(site.url, "agent:alice") as alice, _client(site, CAROL_TOKEN) as carol:
        for agent in (alice, carol):
            put = await agent.put("/api/connections/local", json={"secret": marker("s")})
            assert put.status_code == 200, put.text
    seen: dict[str, list[str]] = {}
    for token in (OPERATOR_TOKEN, ACME_TOKEN):
        async with _client(site, token) as operator:
            items = (await operator.get("/api/connections/all")).json()["items"]
        seen[token] = [(item["principal"], item["tenant"]) for item in items]
    assert seen[OPERATOR_TOKEN] == [("agent:alice", None)]  # untenanted: not acme's carol
    assert seen[ACME_TOKEN] == [("agent:carol", "acme")]  # the id and its tenant apart
