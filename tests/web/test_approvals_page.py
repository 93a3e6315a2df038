"""The approvals web page in a real browser (Debian chromium driven by Playwright)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from playwright.async_api import Browser, Locator, Page, async_playwright, expect
from support import echo_upstream, serve_asgi, write_config

from gateway import Gateway
from gateway.http_app import build_app
from toolsets import CallContext, Principal

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed")

APPROVER = "approver-token-for-tests"
POLICY = """
version: 1
defaults: {effect: allow}
rules:
  - id: echo-needs-approval
    tools: [e__echo]
    effect: ask
    reason: "echo <b>needs</b> a human"
    approval: {hold: 30s, decisions: [approve, deny, edit, respond]}
"""
TRICKY = "<img src=x onerror=alert(1)>\u202egnp.exe"


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=args)
        yield launched
        await launched.close()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Gateway]]:
    (tmp_path / "policy.yaml").write_text(POLICY)
    config = write_config(
        tmp_path,
        [echo_upstream("e")],
        policies={"files": ["policy.yaml"]},
        approvals={"store": "memory"},
        auth={"approvers": [{"id": "user:alice", "token": APPROVER}]},
    )
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as url:
        yield url, gateway


async def _held_call(
    gateway: Gateway, text: str, results: list[Any], caller: str = "agent:web-test"
) -> None:
    ctx = CallContext(principal=Principal(id=caller))
    results.append(await gateway.call_tool("e__echo", {"text": text}, ctx))


async def _answered(gateway: Gateway, text: str, results: dict[str, Any], caller: str) -> None:
    """A held call of ``caller`` echoing ``text``; its result lands in ``results[text]``."""
    ctx = CallContext(principal=Principal(id=caller))
    results[text] = await gateway.call_tool("e__echo", {"text": text}, ctx)


async def _sign_in(page: Page, url: str) -> None:
    await page.goto(f"{url}/approvals")
    await page.fill("#token", APPROVER)
    await page.click("#login button")


async def _held_item(page: Page, url: str) -> Locator:
    """Sign in on ``page`` and return the one held call once the page lists it."""
    await _sign_in(page, url)
    item = page.locator("li.call")
    await expect(item).to_have_count(1, timeout=15_000)
    return item


async def test_an_approver_approves_a_held_call_from_the_page_and_it_runs(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_held_call, gateway, "from the page", results)
        item = await _held_item(await browser.new_page(), url)
        await expect(item.locator(".tool")).to_have_text("e__echo")
        await expect(item.locator(".principal")).to_have_text("agent:web-test")
        await expect(item.locator(".args")).to_contain_text('"text": "from the page"')
        await item.locator("button.approve").click()
        await expect(item).to_have_count(0)
    assert results[0].first_text() == "from the page"
    assert not results[0].is_error


async def test_a_deny_from_the_page_reaches_the_model_as_the_approvers_message(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(_held_call, gateway, "nope", results)
        item = await _held_item(await browser.new_page(), url)
        await item.locator("input.message").fill("Not today, ask again tomorrow.")
        await item.locator("button.deny").click()
        await expect(item).to_have_count(0)
    assert results[0].is_error
    assert results[0].first_text() == "Not today, ask again tomorrow."


async def test_upstream_text_is_shown_escaped_with_invisible_characters_made_visible(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    async with anyio.create_task_group() as tg:
        tg.start_soon(_held_call, gateway, TRICKY, [])
        page = await browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        item = await _held_item(page, url)
        await expect(item.locator(".args")).to_contain_text("<img src=x onerror=alert(1)>")
        await expect(item.locator(".args")).to_contain_text("\\u202e")
        await expect(item.locator(".reason")).to_have_text("echo <b>needs</b> a human")
        assert await page.locator("li.call img").count() == 0
        assert dialogs == []
        await item.locator("button.respond").click()


async def test_the_page_refuses_framing_and_a_wrong_token_sees_nothing(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, _ = served
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{url}/approvals")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    page = await browser.new_page()
    await page.goto(f"{url}/approvals")
    await page.fill("#token", "not-a-token")
    await page.click("#login button")
    await expect(page.locator("#error")).to_contain_text("401")
    await expect(page.locator("#login")).to_be_visible()


async def test_an_approver_sees_a_changed_tool_definition_and_accepts_it(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    async with gateway.events.subscribe(["tool.pin_changed"]) as changes:
        await gateway.call_tool("e__rug_pull", {"part": "schema"})
        with anyio.fail_after(15):
            await anext(changes)
    assert "e__weather" not in await gateway.tools()
    page = await browser.new_page()
    await _sign_in(page, url)
    item = page.locator("li.pin-change")
    await expect(item).to_have_count(1, timeout=15_000)
    await expect(item.locator(".name")).to_have_text("e__weather")
    await expect(item.locator(".fields")).to_have_text("changed: inputSchema")
    await expect(item.locator(".diff")).to_contain_text('+      "home_address"')
    await item.locator("button.accept").click()
    await expect(item).to_have_count(0)
    assert "e__weather" in await gateway.tools()


# The live inbox: the page follows the event stream and never rebuilds an item, so what an
# approver types survives other calls arriving or leaving. The page's safety poll runs every
# 30 s, so an item showing up or leaving within the 5 s expect timeout came over the stream.

SCREENSHOTS = Path(__file__).parents[2] / "docs" / "screenshots"


def _call(page: Page, text: str) -> Locator:
    return page.locator("li.call", has_text=f'"text": "{text}"')


async def _screenshot(page: Page, name: str) -> None:
    if os.environ.get("LOCKGATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


async def test_a_deny_message_being_typed_survives_a_second_call_arriving_live(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_answered, gateway, "first", results, "agent:planner")
        page = await browser.new_page(viewport={"width": 1000, "height": 900})
        await _held_item(page, url)
        first = _call(page, "first")
        message = first.locator("input.message")
        await message.fill("Not this one, ")
        typed_into = await message.element_handle()
        tg.start_soon(_answered, gateway, "second", results, "agent:mailer")
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(_call(page, "second").locator(".principal")).to_have_text("agent:mailer")
        assert await typed_into.evaluate("input => input.isConnected")
        await expect(message).to_have_value("Not this one, ")
        await message.press("End")
        await message.type("use the staging mailbox.")
        await _screenshot(page, "approvals-inbox.png")
        await first.locator("button.deny").click()
        await expect(first).to_have_count(0)
        await expect(page.locator("#history-list li.past")).to_have_count(1)
        await expect(page.locator("#history-list .outcome")).to_have_text(
            re.compile(r"^Denied by you at \d\d:\d\d$")
        )
        await _call(page, "second").locator("button.approve").click()
        await expect(page.locator("#history-list li.past")).to_have_count(2)
        await _screenshot(page, "approvals-history.png")
    assert results["first"].is_error
    assert results["first"].first_text() == "Not this one, use the staging mailbox."
    assert results["second"].first_text() == "second"
    await expect(page.locator("#status")).to_have_text("Signed in as user:alice")


async def test_edited_arguments_being_typed_survive_a_second_call_and_are_what_runs(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_answered, gateway, "draft", results, "agent:planner")
        page = await browser.new_page()
        await _held_item(page, url)
        edits = _call(page, "draft").locator("textarea.edit-args")
        await edits.fill('{"text": "final"}')
        tg.start_soon(_answered, gateway, "other", results, "agent:planner")
        await expect(page.locator("li.call")).to_have_count(2, timeout=5_000)
        await expect(edits).to_have_value('{"text": "final"}')
        await _call(page, "draft").locator("button.edit").click()
        await expect(page.locator("#history-list .outcome")).to_have_text(
            re.compile(r"^Approved with edits by you at ")
        )
        await _call(page, "other").locator("button.deny").click()
    assert results["draft"].first_text() == "final"
    assert results["other"].is_error


async def test_a_call_decided_elsewhere_leaves_the_inbox_for_history_without_reload(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_answered, gateway, "elsewhere", results, "agent:planner")
        page = await browser.new_page()
        item = await _held_item(page, url)
        await expect(page.locator("#live")).to_have_text("live")
        id = await item.get_attribute("data-id")
        assert id is not None
        alice = Principal(id="user:alice")
        await gateway.approvals.decide(id, "deny", by=alice, channel="cli", message="Done in CLI.")
        await expect(page.locator("li.call")).to_have_count(0, timeout=5_000)
        past = page.locator("#history-list li.past")
        await expect(past).to_have_count(1)
        await expect(past.locator(".outcome")).to_have_text(
            re.compile(r"^Denied by user:alice at \d\d:\d\d \(cli\)$")
        )
        await expect(past.locator(".said")).to_have_text("Message: Done in CLI.")
        await expect(page.locator("#empty")).to_be_visible()
    assert results["elsewhere"].first_text() == "Done in CLI."


async def test_history_lists_calls_decided_before_the_page_was_opened(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(_answered, gateway, "earlier", results, "agent:planner")
        with anyio.fail_after(10):
            while not (held := await gateway.store.list(state=["pending"])):
                await anyio.sleep(0.05)
        alice = Principal(id="user:alice")
        await gateway.approvals.decide(held[0].id, "approve", by=alice, channel="cli")
    page = await browser.new_page()
    await _sign_in(page, url)
    past = page.locator("#history-list li.past")
    await expect(past).to_have_count(1, timeout=15_000)
    await expect(past.locator(".tool")).to_have_text("e__echo")
    await expect(past.locator(".outcome")).to_contain_text("by user:alice at ")
    await expect(page.locator("#status")).to_have_text("Signed in (approver token)")


async def test_the_filter_hides_and_shows_items_without_rebuilding_them(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    async with anyio.create_task_group() as tg:
        tg.start_soon(_answered, gateway, "one", {}, "agent:planner")
        tg.start_soon(_answered, gateway, "two", {}, "agent:mailer")
        page = await browser.new_page()
        await _sign_in(page, url)
        await expect(page.locator("li.call")).to_have_count(2, timeout=15_000)
        await _call(page, "one").locator("input.message").fill("kept while hidden")
        await page.fill("#filter", "MAILER")
        await expect(_call(page, "one")).to_be_hidden()
        await expect(_call(page, "two")).to_be_visible()
        hidden_note = "1 waiting call(s) hidden by the filter"
        await expect(page.locator("#filtered")).to_have_text(hidden_note)
        await page.fill("#filter", "planner e__echo")
        await expect(_call(page, "one")).to_be_visible()
        await expect(_call(page, "two")).to_be_hidden()
        await page.fill("#filter", "")
        await expect(page.locator("li.call:visible")).to_have_count(2)
        await expect(_call(page, "one").locator("input.message")).to_have_value("kept while hidden")
        for text in ("one", "two"):
            await _call(page, text).locator("button.approve").click()


async def test_the_edit_box_shows_invisible_characters_as_escapes_that_parse_back(
    served: tuple[str, Gateway], browser: Browser
) -> None:
    url, gateway = served
    results: list[Any] = []
    sneaky = "pay\u200b bob\u202e\U000e0041"
    async with anyio.create_task_group() as tg:
        tg.start_soon(_held_call, gateway, sneaky, results)
        item = await _held_item(await browser.new_page(), url)
        await expect(item.locator(".tool")).to_have_attribute("title", re.compile(r"^tool pin "))
        edits = item.locator("textarea.edit-args")
        shown = await edits.input_value()
        for escape in ("\\u200b", "\\u202e", "\\udb40\\udc41"):
            assert escape in shown
        assert not any(c in shown for c in "\u200b\u202e\U000e0041")
        assert json.loads(shown) == {"text": sneaky}
        await item.locator("button.edit").click()
        await expect(item).to_have_count(0)
    assert results[0].first_text() == sneaky
