"""The approvals web page in a real browser (Debian chromium driven by Playwright): deciding,
escaping, the live inbox, History, changed tool definitions.

The page follows the event stream and never rebuilds an item, so what an approver types
survives other calls arriving or leaving. Its safety poll runs every 30 s, so an item showing
up or leaving within the 5 s expect timeout came over the stream.
"""

from __future__ import annotations

import json
import re

import httpx2
from playwright.async_api import Locator, Page, expect
from web_support import BOB, TRICKY, Site, calls, card, held, marker, past, sign_in

from toolsets import Principal

BY_BOB = Principal(id=BOB, roles=frozenset({"security"}))


async def _only_card(page: Page, site: Site) -> Locator:
    """Sign in on ``page`` and return the one held call once the page lists it."""
    await sign_in(page, site.url)
    item = page.locator("li.call")
    await expect(item).to_have_count(1, timeout=15_000)
    return item


async def test_an_approver_approves_a_held_call_from_the_page_and_it_runs(
    site: Site, page: Page
) -> None:
    async with calls(site.gateway) as held_calls:
        held_calls.start("from the page")
        item = await _only_card(page, site)
        await expect(item.locator(".tool")).to_have_text("e__echo")
        await expect(item.locator(".principal")).to_have_text("agent:web-test")
        await expect(item.locator(".args")).to_contain_text('"text": "from the page"')
        await item.locator("button.approve").click()
        await expect(item).to_have_count(0)
    assert held_calls.results["from the page"].first_text() == "from the page"
    assert not held_calls.results["from the page"].is_error


async def test_a_deny_from_the_page_reaches_the_model_as_the_approvers_message(
    site: Site, page: Page
) -> None:
    async with calls(site.gateway) as held_calls:
        held_calls.start("nope")
        item = await _only_card(page, site)
        await item.locator("button.open-message").click()
        await item.locator("input.message").fill("Not today, ask again tomorrow.")
        await item.locator("button.deny").click()
        await expect(item).to_have_count(0)
    assert held_calls.results["nope"].is_error
    assert held_calls.results["nope"].first_text() == "Not today, ask again tomorrow."


async def test_a_respond_from_the_page_is_the_result_the_model_reads_and_nothing_runs(
    site: Site, page: Page
) -> None:
    async with calls(site.gateway) as held_calls:
        held_calls.start(TRICKY)
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        item = await _only_card(page, site)
        await expect(item.locator(".args")).to_contain_text("<img src=x onerror=alert(1)>")
        await expect(item.locator(".args")).to_contain_text("\\u202e")
        await expect(item.locator(".reason")).to_have_text("echo <b>needs</b> a human")
        assert await page.locator("li.call img").count() == 0
        id = await item.get_attribute("data-id")
        await item.locator("button.open-message").click()
        await item.locator("input.message").fill("The file is already there.")
        await item.locator("button.respond").click()
        await expect(page.locator(f"#history-list [data-id='{id}'] .outcome")).to_have_text(
            re.compile(r"^Answered by you at \d\d:\d\d$")
        )
    assert dialogs == []
    assert held_calls.results[TRICKY].first_text() == "The file is already there."


async def test_the_page_refuses_framing_and_a_wrong_token_sees_nothing(
    site: Site, page: Page
) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{site.url}/approvals")
        module = await http.get(f"{site.url}/approvals/diff.js")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert module.headers["content-type"] == "text/javascript; charset=utf-8"
    await page.goto(f"{site.url}/approvals")
    await page.fill("#token", "not-a-token")
    await page.click("#login button")
    await expect(page.locator("#error")).to_contain_text("401")
    await expect(page.locator("#login")).to_be_visible()


async def test_an_approver_sees_a_changed_tool_definition_and_accepts_it(
    site: Site, page: Page
) -> None:
    gateway = site.gateway
    async with gateway.events.subscribe(["tool.pin_changed"]) as changes:
        await gateway.call_tool("e__rug_pull", {"part": "schema"})
        await anext(changes)
    assert "e__weather" not in await gateway.tools()
    await sign_in(page, site.url)
    item = page.locator("li.pin-change")
    await expect(item).to_have_count(1, timeout=15_000)
    await expect(item.locator(".name")).to_have_text("e__weather")
    await expect(item.locator(".fields")).to_have_text("changed: inputSchema")
    await expect(item.locator(".diff")).to_contain_text('+      "home_address"')
    await item.locator("button.accept").click()
    await expect(item).to_have_count(0)
    assert "e__weather" in await gateway.tools()


async def test_a_deny_message_being_typed_survives_a_second_call_arriving_live(
    site: Site, page: Page
) -> None:
    first, second = marker("first"), marker("second")
    async with calls(site.gateway) as held_calls:
        held_calls.start(first, "agent:planner")
        await _only_card(page, site)
        await card(page, first).locator("button.open-message").click()
        message = card(page, first).locator("input.message")
        await expect(message).to_be_focused()  # the box opens on demand, ready to type
        await message.fill("Not this one, ")
        typed_into = await message.element_handle()
        held_calls.start(second, "agent:mailer")
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(card(page, second).locator(".principal")).to_have_text("agent:mailer")
        assert await typed_into.evaluate("input => input.isConnected")
        await expect(message).to_have_value("Not this one, ")
        await message.press("End")
        await message.type("use the staging mailbox.")
        await card(page, first).locator("button.deny").click()
        await expect(card(page, first)).to_have_count(0)
        await expect(past(page, first).locator(".outcome")).to_have_text(
            re.compile(r"^Denied by you at \d\d:\d\d$")
        )
        await card(page, second).locator("button.approve").click()
        await expect(past(page, second)).to_have_count(1)
    assert held_calls.results[first].is_error
    assert held_calls.results[first].first_text() == "Not this one, use the staging mailbox."
    assert held_calls.results[second].first_text() == second


async def test_edited_arguments_being_typed_survive_a_second_call_and_are_what_runs(
    site: Site, page: Page
) -> None:
    draft, other = marker("draft"), marker("other")
    async with calls(site.gateway) as held_calls:
        held_calls.start(draft, "agent:planner")
        await _only_card(page, site)
        await card(page, draft).locator("button.open-edit").click()
        edits = card(page, draft).locator("textarea.edit-args")
        await edits.fill('{"text": "final"}')
        held_calls.start(other, "agent:planner")
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(edits).to_have_value('{"text": "final"}')
        await card(page, draft).locator("button.edit").click()
        await expect(past(page, draft).locator(".outcome")).to_have_text(
            re.compile(r"^Approved with edits by you at ")
        )
        await card(page, other).locator("button.deny").click()
    assert held_calls.results[draft].first_text() == "final"
    assert held_calls.results[other].is_error


async def test_a_call_decided_elsewhere_leaves_the_inbox_for_history_without_reload(
    site: Site, page: Page
) -> None:
    text = marker("elsewhere")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text, "agent:planner")
        item = await _only_card(page, site)
        id = await item.get_attribute("data-id")
        assert id is not None
        await site.gateway.approvals.decide(
            id, "deny", by=BY_BOB, channel="cli", message="Done in CLI."
        )
        await expect(page.locator("li.call")).to_have_count(0, timeout=5_000)
        await expect(past(page, text).locator(".outcome")).to_have_text(
            re.compile(r"^Denied by user:bob at \d\d:\d\d \(cli\)$")
        )
        await expect(past(page, text).locator(".said")).to_have_text("Message: Done in CLI.")
        await expect(page.locator("#empty")).to_be_visible()
    assert held_calls.results[text].first_text() == "Done in CLI."


async def test_history_lists_calls_decided_before_the_page_was_opened(
    site: Site, page: Page
) -> None:
    text = marker("earlier")
    async with calls(site.gateway) as held_calls:
        held_calls.start(text, "agent:planner")
        id = await held(site.gateway, text)
        await site.gateway.approvals.decide(id, "approve", by=BY_BOB, channel="cli")
    await sign_in(page, site.url)
    await expect(past(page, text).locator(".tool")).to_have_text("e__echo")
    await expect(past(page, text).locator(".outcome")).to_contain_text("by user:bob at ")
    await expect(page.locator("#status")).to_have_text("Signed in as user:alice (security)")


async def test_the_filter_hides_and_shows_items_without_rebuilding_them(
    site: Site, page: Page
) -> None:
    one, two = marker("one"), marker("two")
    async with calls(site.gateway) as held_calls:
        held_calls.start(one, "agent:planner")
        held_calls.start(two, "agent:mailer")
        await sign_in(page, site.url)
        await expect(page.locator("li.call")).to_have_count(2, timeout=15_000)
        await card(page, one).locator("button.open-message").click()
        await card(page, one).locator("input.message").fill("kept while hidden")
        await page.fill("#filter", "MAILER")
        await expect(card(page, one)).to_be_hidden()
        await expect(card(page, two)).to_be_visible()
        hidden_note = "1 waiting call(s) hidden by the filter"
        await expect(page.locator("#filtered")).to_have_text(hidden_note)
        await page.fill("#filter", "planner e__echo")
        await expect(card(page, one)).to_be_visible()
        await expect(card(page, two)).to_be_hidden()
        await page.fill("#filter", "")
        await expect(page.locator("li.call:visible")).to_have_count(2)
        await expect(card(page, one).locator("input.message")).to_have_value("kept while hidden")
        for text in (one, two):
            await card(page, text).locator("button.approve").click()


async def test_the_edit_box_shows_invisible_characters_as_escapes_that_parse_back(
    site: Site, page: Page
) -> None:
    sneaky = "pay\u200b bob\u202e\U000e0041"
    async with calls(site.gateway) as held_calls:
        held_calls.start(sneaky)
        item = await _only_card(page, site)
        await item.locator("button.open-edit").click()
        edits = item.locator("textarea.edit-args")
        shown = await edits.input_value()
        for escape in ("\\u200b", "\\u202e", "\\udb40\\udc41"):
            assert escape in shown
        assert not any(c in shown for c in "\u200b\u202e\U000e0041")
        assert json.loads(shown) == {"text": sneaky}
        await item.locator("button.edit").click()
        await expect(item).to_have_count(0)
    assert held_calls.results[sneaky].first_text() == sneaky
