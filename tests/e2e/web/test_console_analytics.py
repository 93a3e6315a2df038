"""The console's Approvals section against a served gateway with a stdio echo upstream (Debian
chromium driven by Playwright): the figures per rule, per tool and per approver of a scripted
sequence of decisions, and a grant suggestion's policy snippet after five approvals of one
pattern, gone after one denial of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from playwright.async_api import Browser, Locator, Page, expect
from web_support import (
    Site,
    approver_api,
    console_page,
    console_site,
    decided_call,
    screenshot,
)

OPERATOR = "user:olga"
OPERATOR_TOKEN = "analytics-operator-token"
CALLER = "agent:steady"
PHONE = 390


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    operator = {"id": OPERATOR, "token": OPERATOR_TOKEN, "roles": ["operator", "security"]}
    async with console_site(
        tmp_path_factory.mktemp("analytics"), {"approvers": [operator]}
    ) as site:
        yield site


@pytest.fixture
async def console(browser: Browser, site: Site) -> AsyncIterator[Page]:
    """The console's Approvals section at phone width, signed in as the operator."""
    async with console_page(browser, site.url, OPERATOR_TOKEN, width=PHONE) as page:
        await expect(page.locator("#status")).to_have_text(f"Signed in as {OPERATOR} (operator)")
        await page.locator('#sections a[href="#analytics"]').click()
        await expect(page.locator("#analytics")).to_be_visible()
        yield page
        assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE


async def _stats(api: httpx2.AsyncClient) -> dict[str, Any]:
    response = await api.get("/api/analytics/approvals?since=7d")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _item(page: Page, list_id: str, name: str) -> Locator:
    return page.locator(f"#{list_id} li", has=page.locator("h3", has_text=name))


async def test_five_approvals_of_one_pattern_show_its_snippet_and_one_denial_takes_it_away(
    site: Site, console: Page
) -> None:
    async with approver_api(site, OPERATOR_TOKEN) as api:
        for _ in range(5):
            await decided_call(site, api, CALLER, "ASK steady", decision="approve")
        stats = await _stats(api)
    [found] = stats["suggestions"]
    assert (found["tool"], found["principal"], found["approvals"]) == ("e__echo", CALLER, 5)

    await console.click("#analytics-refresh")
    suggestion = console.locator("#analytics-suggestions li.suggestion")
    await expect(suggestion).to_have_count(1)
    await expect(suggestion.locator("h3")).to_have_text("e__echo: approved 5 of 5 times")
    await expect(suggestion).to_contain_text(f"by {OPERATOR} · for {CALLER}")
    await expect(suggestion.locator("pre")).to_have_text(found["policy"].rstrip("\n"))
    assert f"id: {found['id']}" in found["policy"]  # the snippet is the allow rule itself
    await expect(console.locator("#analytics-none")).to_be_hidden()
    for list_id, name in [
        ("analytics-rules", "ask-echo"),
        ("analytics-tools", "e__echo"),
        ("analytics-approvers", OPERATOR),
    ]:
        await expect(_item(console, list_id, name)).to_contain_text(
            "5 held · 0 waiting · approve 5"
        )
    await screenshot(console, "console-approvals-suggestion.png")

    async with approver_api(site, OPERATOR_TOKEN) as api:
        await decided_call(site, api, CALLER, "ASK steady", decision="deny")
        assert (await _stats(api))["suggestions"] == []
    await console.click("#analytics-refresh")
    await expect(console.locator("#analytics-none")).to_be_visible()
    await expect(suggestion).to_have_count(0)
    for list_id, name in [("analytics-tools", "e__echo"), ("analytics-approvers", OPERATOR)]:
        await expect(_item(console, list_id, name)).to_contain_text(
            "6 held · 0 waiting · approve 5, deny 1"
        )
