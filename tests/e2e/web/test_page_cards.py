"""What a card tells the approver: the caller with its roles and session, when it was asked,
a live countdown, whether the caller still waits, who else may decide, and, while editing,
what the edit changes."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect
from web_support import ALICE_TOKEN, Site, calls, card, held, marker, past, sign_in


async def test_the_page_names_the_approver_and_each_card_the_callers_roles_and_session(
    site: Site, page: Page
) -> None:
    quiet, loud = marker("quiet"), marker("LOUD")
    async with calls(site.gateway) as held_calls:
        held_calls.start(quiet, "agent:ops-bot", roles={"planner", "ops"}, session_id="s-123")
        held_calls.start(loud, "agent:shouter")
        await sign_in(page, site.url)
        await expect(page.locator("#status")).to_have_text("Signed in as user:alice (security)")
        first = card(page, quiet)
        await expect(first.locator(".principal")).to_have_text("agent:ops-bot (ops, planner)")
        await expect(first.locator(".session")).to_have_text("s-123")
        requested = re.compile(r"^less than a minute ago \(at \d\d:\d\d\)$")
        await expect(first.locator(".requested")).to_have_text(requested)
        await expect(first.locator(".rule")).to_have_text("echo-needs-approval")
        await expect(first.locator(".others")).to_have_text("any other approver")
        second = card(page, loud)
        await expect(second.locator(".session")).to_have_text("none (no session)")
        await expect(second.locator(".rule")).to_have_text("loud-echo")
        await expect(second.locator(".reason")).to_have_text("shouting needs security")
        await expect(second.locator(".others")).to_have_text("other role:security members")
        await expect(second.locator(".stages")).to_be_hidden()
        for text in (quiet, loud):
            await card(page, text).locator("button.approve").click()


async def test_the_time_left_counts_down_every_second(site: Site, page: Page) -> None:
    text = marker("countdown")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text)
        await sign_in(page, site.url)
        left = card(page, text).locator(".expires")
        await expect(left).to_have_text(re.compile(r"^1[45]:\d\d left$"), timeout=15_000)
        shown = await left.text_content()
        await expect(left).not_to_have_text(shown or "", timeout=3_000)
        await expect(left).to_have_text(re.compile(r"^1[45]:\d\d left$"))
        await card(page, text).locator("button.deny").click()


async def test_a_card_says_whether_the_caller_is_still_waiting(site: Site, page: Page) -> None:
    gone, open_ = marker("gone"), marker("open")
    async with calls(site.gateway) as held_calls:
        held_calls.start(gone, max_hold=0)
        await held(site.gateway, gone)
        held_calls.start(open_)
        await sign_in(page, site.url)
        await expect(card(page, open_).locator(".waiting")).to_have_text(
            "yes: its request is held open until a decision"
        )
        await expect(card(page, gone).locator(".waiting")).to_contain_text(
            "no: it was answered \u201cpending\u201d"
        )
        await expect(card(page, gone)).to_have_class(re.compile(r"\bgone\b"))
        for text in (gone, open_):
            await card(page, text).locator("button.deny").click()
        await expect(past(page, gone).locator(".waiting")).to_be_hidden()
    assert "Not executed yet" in held_calls.results[gone].first_text()


async def test_editing_shows_what_changes_against_the_requested_arguments_escaped(
    site: Site, page: Page
) -> None:
    text = marker("before")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text)
        await sign_in(page, site.url)
        item = card(page, text)
        edits, diff = item.locator("textarea.edit-args"), item.locator(".edit-diff li")
        await expect(edits).to_be_hidden()  # a compact card: the edit box opens on demand
        await item.locator("button.open-edit").click()
        await expect(edits).to_be_focused()
        await expect(item.locator(".edit-diff")).to_be_hidden()
        await edits.fill('{"text": "<b>after</b>\\u202e", "extra": [1]}')
        await expect(diff).to_have_count(2)
        await expect(diff.nth(0)).to_have_text("added extra [1]")
        await expect(diff.nth(0)).to_have_class("added")
        await expect(diff.nth(1)).to_have_text(f'changed text "{text}" → "<b>after</b>\\u202e"')
        await expect(diff.nth(1)).to_have_class("changed")
        requested = await diff.nth(1).locator(".before").bounding_box()
        edited = await diff.nth(1).locator(".after").bounding_box()
        assert requested is not None
        assert edited is not None
        assert abs(requested["y"] - edited["y"]) < 2  # side by side: one row,
        assert edited["x"] > requested["x"] + requested["width"]  # requested left of edited
        assert await item.locator(".edit-diff b").count() == 0
        await edits.fill("{}")
        await expect(diff).to_have_text([f'removed text "{text}"'])
        await edits.fill('{"text": ')
        await expect(diff).to_have_text([re.compile(r"^Not valid JSON yet: ")])
        await edits.fill(f'{{"text": "{text}"}}')
        await expect(diff).to_have_text(["No changes: the requested arguments would run."])
        await edits.fill('{"text": "edited"}')
        await expect(diff).to_have_count(1)
        await item.locator("button.edit").click()
        await expect(past(page, text).locator(".outcome")).to_contain_text("Approved with edits")
    assert held_calls.results[text].first_text() == "edited"


async def test_an_approver_signs_in_and_approves_with_the_keyboard_alone(
    site: Site, page: Page
) -> None:
    text = marker("keys")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text)
        await page.goto(f"{site.url}/approvals")
        await page.keyboard.press("Tab")
        await expect(page.locator("a.skip")).to_be_focused()
        await page.keyboard.press("Tab")
        await expect(page.locator("#token")).to_be_focused()
        await page.keyboard.type(ALICE_TOKEN)
        await page.keyboard.press("Enter")
        approve = card(page, text).locator("button.approve")
        await expect(approve).to_be_visible(timeout=15_000)
        for _ in range(30):
            if await approve.evaluate("button => button === document.activeElement"):
                break
            await page.keyboard.press("Tab")
        await expect(approve).to_be_focused()
        assert await approve.evaluate("button => getComputedStyle(button).outlineStyle") == "solid"
        await page.keyboard.press("Enter")
        await expect(past(page, text).locator(".outcome")).to_be_focused()
    assert held_calls.results[text].first_text() == text
