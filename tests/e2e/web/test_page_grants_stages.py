"""Grants on the approvals page: approving for the session or for the tool for a while, the
Grants panel kept current by ``tool.grant.*`` events, and revoking from it."""

from __future__ import annotations

import re

from playwright.async_api import Browser, Page, expect
from web_support import (
    BOB_TOKEN,
    CAROL_TOKEN,
    CTO_TOKEN,
    Site,
    approver_api,
    calls,
    card,
    held,
    marker,
    new_page,
    past,
    screenshot,
    sign_in,
)

from toolsets import CallContext, Principal

POLICIES = ("grants.yaml",)


def _as(caller: str, session: str) -> CallContext:
    return CallContext(principal=Principal(id=caller), session_id=session)


async def test_approving_for_the_session_lets_its_next_call_run_until_the_grant_is_revoked(
    site: Site, page: Page
) -> None:
    first, second, third = marker("first"), marker("second"), marker("third")
    gateway = site.gateway
    async with calls(gateway) as held_calls:
        held_calls.start(first, "agent:planner", session_id="s-grant")
        await sign_in(page, site.url)
        item = card(page, first)
        await expect(item.locator("button.approve")).to_have_text("Approve once")
        await item.locator("button.grant-session").click()
        await expect(past(page, first).locator(".outcome")).to_have_text(
            re.compile(r"^Approved for this session by you at \d\d:\d\d; grant gr_")
        )
    grant = page.locator("#grant-list li.grant")
    await expect(grant.locator(".what")).to_have_text(
        re.compile(r"^Session grant: e__echo in session s-grant ")
    )
    async with gateway.events.subscribe(["tool.call"]) as events:
        result = await gateway.call_tool(
            "e__echo", {"text": second}, _as("agent:planner", "s-grant")
        )
        event = await anext(events)
    assert result.first_text() == second
    assert event.data["decision"]["grant"].startswith("gr_")
    await grant.locator("button.revoke").click()
    await expect(grant).to_have_count(0)
    await expect(page.locator("#grants-empty")).to_be_visible()
    async with calls(gateway) as held_calls:
        held_calls.start(third, "agent:planner", session_id="s-grant")
        await expect(card(page, third)).to_be_visible(timeout=5_000)
        await card(page, third).locator("button.deny").click()
    assert held_calls.results[third].is_error


async def test_a_tool_grant_for_one_caller_and_a_while_shows_in_the_panel_until_revoked_elsewhere(
    site: Site, page: Page
) -> None:
    mine, theirs, again = marker("mine"), marker("theirs"), marker("again")
    gateway = site.gateway
    async with calls(gateway) as held_calls:
        held_calls.start(mine, "agent:mailer", session_id="s-one")
        await sign_in(page, site.url)
        item = card(page, mine)
        await expect(item.locator(".grant-duration option")).to_have_text(
            ["5 min", "15 min", "30 min", "1 h", "2 h"]
        )
        await expect(item.locator(".grant-duration")).to_have_value("1800")
        await item.locator(".grant-duration").select_option(label="1 h")
        await expect(item.locator("input.grant-principal")).to_be_checked()
        await item.locator("button.grant-tool-go").click()
        await expect(past(page, mine).locator(".outcome")).to_contain_text("Approved for this tool")
    grant = page.locator("#grant-list li.grant")
    await expect(grant.locator(".what")).to_have_text("Tool grant: e__echo on e for agent:mailer")
    await expect(grant.locator(".left")).to_have_text(re.compile(r"^(59:\d\d|1 h 00 min) left$"))
    ran = await gateway.call_tool("e__echo", {"text": again}, _as("agent:mailer", "s-two"))
    assert ran.first_text() == again
    async with calls(gateway) as held_calls:
        held_calls.start(theirs, "agent:other", session_id="s-two")
        await expect(card(page, theirs)).to_be_visible(timeout=5_000)
        await card(page, theirs).locator("button.deny").click()
    id = await grant.get_attribute("data-id")
    async with approver_api(site, BOB_TOKEN) as bob:
        revoked = await bob.post(f"/api/grants/{id}/revoke", json={})
    assert revoked.status_code == 200, revoked.text
    await expect(grant).to_have_count(0, timeout=5_000)
    async with calls(gateway) as held_calls:
        held_calls.start(mine, "agent:mailer", session_id="s-three")
        await held(gateway, mine)
        await expect(card(page, mine)).to_be_visible(timeout=5_000)
        await card(page, mine).locator("button.deny").click()


async def test_a_staged_call_shows_its_stages_and_votes_and_reaches_each_stage_live(
    site: Site, page: Page, browser: Browser
) -> None:
    purge, grantable = marker("PURGE"), marker("grantable")
    async with calls(site.gateway) as held_calls, new_page(browser) as cto:
        held_calls.start(purge, "agent:janitor", session_id="s-ops")
        held_calls.start(grantable, "agent:mailer", session_id="s-mail")
        await sign_in(page, site.url)
        await sign_in(cto, site.url, CTO_TOKEN)
        item = card(page, purge)
        stages = item.locator(".stages")
        await expect(stages).to_have_text("stage 1 of 2: 0 of 2 security votes; then user:cto")
        await expect(item.locator(".others")).to_have_text("other role:security members")
        await expect(item.locator("button.break-glass-open")).to_be_hidden()
        await item.locator("button.approve").click()
        await expect(item.locator(".note")).to_have_text(
            "You voted for this call; it waits for the other votes."
        )
        await expect(stages).to_have_text("stage 1 of 2: 1 of 2 security votes; then user:cto")
        await expect(item.locator(".votes")).to_have_text(re.compile(r"^you at \d\d:\d\d \(web\)$"))
        await expect(item.locator("button.approve")).to_be_disabled()
        await expect(card(page, grantable).locator("button.grant-session")).to_be_visible()
        await screenshot(page, "approvals-inbox.png")
        assert await card(cto, purge).count() == 0  # not the CTO's turn yet
        await _approve(site, BOB_TOKEN, await item.get_attribute("data-id"))
        await expect(stages).to_have_text("stage 2 of 2: waiting for user:cto", timeout=5_000)
        await expect(item.locator(".others")).to_have_text("user:cto")
        await expect(item.locator(".votes")).to_have_text(
            re.compile(r"^you at \d\d:\d\d \(web\), user:bob at \d\d:\d\d \(api\)$")
        )
        await expect(item.locator(".blocked")).to_have_text(
            "Stage 2 is for user:cto; you are not among them."
        )
        await expect(item.locator(".note")).to_be_hidden()
        await expect(card(cto, purge).locator(".others")).to_have_text("nobody else", timeout=5_000)
        await card(cto, purge).locator("button.approve").click()
        await expect(past(page, purge).locator(".outcome")).to_have_text(
            re.compile(r"^Approved by user:cto at \d\d:\d\d \(web\)$"), timeout=5_000
        )
        await card(page, grantable).locator("button.approve").click()
    assert held_calls.results[purge].first_text() == purge


async def test_breaking_glass_asks_for_a_reason_and_approves_at_once_skipping_the_stages(
    site: Site, page: Page
) -> None:
    purge = marker("PURGE")
    async with calls(site.gateway) as held_calls:
        held_calls.start(purge, "agent:janitor")
        await sign_in(page, site.url, CAROL_TOKEN)
        await expect(page.locator("#status")).to_have_text("Signed in as user:carol (oncall)")
        item = card(page, purge)
        await expect(item.locator(".blocked")).to_have_text(
            "Stage 1 is for security; you are not among them."
        )
        await expect(item.locator("button.approve")).to_be_disabled()
        opener, reason = item.locator("button.break-glass-open"), item.locator("input.bg-reason")
        await opener.click()
        await expect(reason).to_be_focused()
        await reason.press("Escape")
        await expect(item.locator("form.break-glass")).to_be_hidden()
        await expect(opener).to_be_focused()
        await opener.press("Enter")
        await reason.fill("   ")
        await reason.press("Enter")
        await expect(page.locator("#error")).to_have_text("Breaking glass needs a reason.")
        await reason.fill("prod is down, INC-42")
        await reason.press("Enter")
        done = past(page, purge)
        await expect(done.locator(".outcome")).to_have_text(
            re.compile(r"^Approved by breaking glass by you at \d\d:\d\d$")
        )
        await expect(done.locator(".said")).to_have_text("Reason: prod is down, INC-42")
    assert held_calls.results[purge].first_text() == purge


async def _approve(site: Site, token: str, id: str | None) -> None:
    async with approver_api(site, token) as client:
        response = await client.post(f"/api/approvals/{id}/decision", json={"decision": "approve"})
    assert response.status_code == 200, response.text


async def test_at_phone_width_cards_stack_and_nothing_scrolls_sideways(
    site: Site, page: Page
) -> None:
    purge, wide = marker("PURGE"), marker("wide-" + "x" * 200)
    await page.set_viewport_size({"width": 375, "height": 800})
    async with calls(site.gateway) as held_calls:
        held_calls.start(purge, "agent:janitor")
        held_calls.start(wide, "agent:mailer", session_id="s-phone")
        await sign_in(page, site.url)
        first, second = card(page, wide), card(page, purge)
        await expect(first.locator(".grant-tool")).to_be_visible()
        await expect(second.locator(".stages")).to_be_visible()
        assert await page.evaluate("document.documentElement.scrollWidth") <= 375
        top, below = await first.bounding_box(), await second.bounding_box()
        assert top is not None
        assert below is not None
        assert below["y"] >= top["y"] + top["height"]
        assert 0 <= top["x"] <= top["x"] + top["width"] <= 375
        await screenshot(page, "approvals-phone.png")
        for text in (wide, purge):
            await card(page, text).locator("button.deny").click()
