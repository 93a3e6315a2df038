"""Keyboard only, no mouse (Debian chromium driven by Playwright): an operator signs in to the
console, moves between its sections and acts in them; an approver edits a held call's arguments
with ``e``, closes and reopens the box with Esc and ``e``, and approves the edit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, expect
from support import echo_upstream, serve_asgi, write_config
from web_support import ALICE_TOKEN, APPROVERS, HERE, Site, calls, card, marker, new_page

from gateway import Gateway
from gateway.http.app import build_app

OPERATOR_TOKEN = "keys-operator-token-for-tests"
TABS = 60
"""More Tab presses than the pages have focusable elements before the wanted one."""


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    folder = tmp_path_factory.mktemp("keys")
    operator = {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator"]}
    config = write_config(
        folder,
        [echo_upstream("e")],
        policies={"files": [str(HERE / "fixtures" / "policy.yaml")]},
        approvals={"store": "memory"},
        events={"audit": {"path": str(folder / "audit.db")}},
        auth={"approvers": [*APPROVERS, operator]},
    )
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as url:
        assert await gateway.wait_ready(30)
        yield Site(url, gateway)


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    async with new_page(browser, width=390) as opened:
        yield opened


async def _tab_to(page: Page, selector: str, back: bool = False) -> None:
    """Press Tab (Shift+Tab when ``back``) until the element ``selector`` has the focus."""
    key = "Shift+Tab" if back else "Tab"
    for _ in range(TABS):
        await page.keyboard.press(key)
        if await page.evaluate("s => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{TABS} presses of {key} never reached {selector}")


async def _sign_in(page: Page, url: str, token: str) -> None:
    await page.goto(url)
    await _tab_to(page, "#token")
    await page.keyboard.type(token)
    await page.keyboard.press("Enter")


async def test_an_operator_moves_between_sections_and_acts_with_the_keyboard_alone(
    site: Site, page: Page
) -> None:
    await _sign_in(page, f"{site.url}/console", OPERATOR_TOKEN)
    await expect(page.locator("#status")).to_have_text("Signed in as user:olga (operator)")

    await _tab_to(page, '#sections a[href="#policies"]')
    await page.keyboard.press("Enter")
    await expect(page.locator("#policies")).to_be_visible()
    await expect(page.locator("#policies-title")).to_be_focused()  # Tab goes on into it
    await _tab_to(page, "#explain-tool")
    await page.keyboard.type("e__echo")
    await page.keyboard.press("Tab")
    await expect(page.locator("#explain-principal")).to_be_focused()
    await page.keyboard.type("agent:bot")
    await _tab_to(page, "#explain-args")
    await page.keyboard.press("Control+A")
    await page.keyboard.type('{"text": "hi"}')
    await _tab_to(page, "#explain-form button")
    await page.keyboard.press("Enter")
    await expect(page.locator("#explain-out")).to_contain_text("rule:     echo-needs-approval")

    await _tab_to(page, '#sections a[href="#audit"]', back=True)
    await page.keyboard.press("Enter")
    await expect(page.locator("#policies")).to_be_hidden()
    await expect(page.locator('#sections a[href="#audit"]')).to_have_attribute(
        "aria-current", "page"
    )
    await expect(page.locator("#audit-title")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.locator("#audit-refresh")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.locator("#audit-verify")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(page.locator("#audit-verdict")).to_contain_text("Chain verified")


async def test_an_approver_edits_and_approves_a_held_call_with_the_keyboard_alone(
    site: Site, page: Page
) -> None:
    text = marker("edit-me")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text)
        await _sign_in(page, f"{site.url}/approvals", ALICE_TOKEN)
        await expect(card(page, text)).to_have_count(1, timeout=15_000)
        await page.keyboard.press("j")
        await expect(card(page, text)).to_be_focused()
        edits = card(page, text).locator("textarea.edit-args")
        await page.keyboard.press("e")
        await expect(edits).to_be_focused()
        await page.keyboard.press("Escape")
        await expect(edits).to_be_hidden()
        await expect(card(page, text).locator("button.open-edit")).to_be_focused()
        await page.keyboard.press("e")  # on the card's button: the card's key
        await expect(edits).to_be_focused()
        await page.keyboard.press("Control+A")
        await page.keyboard.type('{"text": "edited by keyboard"}')
        await _tab_to(page, "li.call button.edit")
        await page.keyboard.press("Enter")
        await expect(card(page, text)).to_have_count(0)
    result = held_calls.results[text]
    assert not result.is_error
    assert result.first_text() == "edited by keyboard"
