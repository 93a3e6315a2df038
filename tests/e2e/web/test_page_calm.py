"""A calmer approvals page (Debian chromium driven by Playwright): compact cards whose message
and edit boxes open on demand, an arrival that never moves the card the approver is on (its
position measured before and after), a keyboard-only flow (j/k, a, d, m, e) and the count of
waiting calls in the window title."""

from __future__ import annotations

from playwright.async_api import Locator, Page, expect
from web_support import Site, calls, card, marker, past, sign_in


async def _top(item: Locator) -> float:
    top: float = await item.evaluate("node => node.getBoundingClientRect().top")
    return top


async def test_a_card_is_compact_until_a_box_is_opened(site: Site, page: Page) -> None:
    text = marker("compact")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text)
        await sign_in(page, site.url)
        item = card(page, text)
        await expect(item).to_have_count(1, timeout=15_000)
        await expect(item.locator("input.message")).to_be_hidden()
        await expect(item.locator("textarea.edit-args")).to_be_hidden()
        closed = (await item.bounding_box() or {}).get("height", 0)
        await item.locator("button.open-edit").click()
        await item.locator("button.open-message").click()
        opened = (await item.bounding_box() or {}).get("height", 0)
        await item.locator("button.approve").click()

    assert 0 < closed < 450  # two compact cards fit on the 900 px screen
    assert opened > closed + 80  # what the boxes take, on demand only


async def test_an_arrival_above_never_moves_the_card_being_typed_into(
    site: Site, page: Page
) -> None:
    first, second = marker("first"), marker("second")
    async with calls(site.gateway) as held_calls:
        held_calls.start(first, "agent:planner")
        await sign_in(page, site.url)
        mine = card(page, first)
        await expect(mine).to_have_count(1, timeout=15_000)
        await mine.locator("button.open-message").click()
        await mine.locator("input.message").fill("about to deny")
        before = await _top(mine)
        held_calls.start(second, "agent:mailer")  # newer: listed above
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(page.locator("li.call").first).to_contain_text(second)
        after = await _top(mine)
        await expect(mine.locator("input.message")).to_be_focused()
        for text in (first, second):
            await card(page, text).locator("button.approve").click()

    assert abs(after - before) <= 1


async def test_an_approver_decides_with_the_keyboard_alone_and_the_title_counts(
    site: Site, page: Page
) -> None:
    one, two = marker("one"), marker("two")
    async with calls(site.gateway) as held_calls:
        held_calls.start(one)
        await sign_in(page, site.url)
        await expect(card(page, one)).to_have_count(1, timeout=15_000)
        held_calls.start(two)
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(page).to_have_title("(2) lockgate approvals")

        await page.keyboard.press("j")
        await expect(card(page, two)).to_be_focused()  # newest first
        await page.keyboard.press("j")
        await expect(card(page, one)).to_be_focused()
        await page.keyboard.press("k")
        await expect(card(page, two)).to_be_focused()
        await page.keyboard.press("a")
        await expect(past(page, two).locator(".outcome")).to_contain_text("Approved by you")
        await expect(page).to_have_title("(1) lockgate approvals")

        await page.keyboard.press("j")
        await expect(card(page, one)).to_be_focused()
        await page.keyboard.press("m")
        await expect(card(page, one).locator("input.message")).to_be_focused()
        await page.keyboard.type("not with the keyboard")  # typed into the field, not keys
        await page.keyboard.press("Escape")
        await expect(card(page, one).locator("input.message")).to_be_hidden()
        await expect(card(page, one).locator("button.open-message")).to_be_focused()
        await page.keyboard.press("d")  # on the card's button: the card's key
        await expect(past(page, one).locator(".outcome")).to_contain_text("Denied by you")
        await expect(page).to_have_title("lockgate approvals")

    assert not held_calls.results[two].is_error
    assert held_calls.results[one].is_error
    assert held_calls.results[one].first_text() == "not with the keyboard"
