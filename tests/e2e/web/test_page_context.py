"""A held call's card carries its context pack (Debian chromium driven by Playwright): what the
tool does, why the call was held, the tool's hints and whose claim they are, the client asking,
what the session did before and the arguments' digest, untrusted text shown as text."""

from __future__ import annotations

import re

from playwright.async_api import Page, expect
from web_support import Site, calls, card, marker, screenshot, sign_in

from toolsets import CallContext, Principal

POLICIES = ("preview.yaml",)


async def test_a_card_says_what_the_tool_does_why_it_was_held_and_what_came_before(
    site: Site, page: Page
) -> None:
    text, session = marker("context"), marker("session")
    assert await site.gateway.wait_ready(60)
    before = CallContext(principal=Principal(id="agent:web-test"), session_id=session)
    await site.gateway.call_tool("e__whoami", {}, before)  # allowed: what the session did first
    async with calls(site.gateway) as held_calls:
        held_calls.start(text, session_id=session)
        await sign_in(page, site.url)
        item = card(page, text)
        await expect(item).to_have_count(1, timeout=15_000)

        await expect(item.locator(".does")).to_have_text("Echo the text back.")
        why = item.locator(".why")
        await expect(why).to_contain_text(re.compile(r"rule 'echo-needs-approval' \(\S+:\d+\)"))
        await expect(why).to_contain_text("echo <b>needs</b> a human")  # as text, not markup
        await expect(item.locator(".hints")).to_contain_text("readOnlyHint=true")
        await expect(item.locator(".hints")).to_contain_text("not verified by the gateway")
        await expect(item.locator(".client")).to_have_text("a client with no name (inprocess)")
        await expect(item.locator(".before")).to_have_text("e__whoami")
        await expect(item.locator(".digest")).to_have_text(re.compile(r"^sha256:[0-9a-f]{64}$"))
        assert await item.locator(".why b").count() == 0
        preview = item.locator(".preview")
        await expect(preview.locator("summary")).to_have_text(
            f'Preview: e__weather {{"city":"{text}"}}'
        )
        await expect(preview.locator("pre")).to_contain_text('"sky": "clear"')
        await screenshot(page, "approvals-context.png")
        await item.locator("button.approve").click()
    assert held_calls.results[text].first_text() == text
