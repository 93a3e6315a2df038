"""Filters over the waiting calls and History: tool, server, caller, rule, state, and a
free-text search; History shows a page at a time."""

from __future__ import annotations

import anyio
from playwright.async_api import Page, expect
from web_support import BOB, Calls, Site, calls, card, held, marker, past, screenshot, sign_in

from gateway import Gateway
from gateway.approvals.pending import HumanDecision
from gateway.events.bus import Subscription
from toolsets import CallContext, Principal

BY_BOB = Principal(id=BOB, roles=frozenset({"security"}))


async def _decided(
    gateway: Gateway, text: str, caller: str, decision: HumanDecision, message: str | None = None
) -> None:
    """A call of ``caller`` echoing ``text``, answered "pending" at once, then decided by bob."""
    ctx = CallContext(principal=Principal(id=caller), max_hold=0)
    await gateway.call_tool("e__echo", {"text": text}, ctx)
    id = await held(gateway, text)
    await gateway.approvals.decide(id, decision, by=BY_BOB, channel="cli", message=message)


async def _cancelled(held_calls: Calls, text: str) -> None:
    """A held call its caller gave up on (cancelled) once the gateway held it."""
    gateway = held_calls.gateway
    async with gateway.events.subscribe(["tool.approval.requested"]) as requested:
        with anyio.CancelScope() as scope:
            held_calls.tg.start_soon(_cancel_on_request, requested, scope)
            ctx = CallContext(principal=Principal(id="agent:quitter"))
            await gateway.call_tool("e__echo", {"text": text}, ctx)


async def _cancel_on_request(requested: Subscription, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` once a call was held: the event is out once the call waits."""
    await anext(requested)
    scope.cancel()


async def test_history_filters_by_rule_state_caller_and_search_and_so_does_the_inbox(
    site: Site, page: Page
) -> None:
    loud_ok, loud_no, quiet = marker("LOUD-ok"), marker("LOUD-no"), marker("quiet")
    gave_up, waiting = marker("gave-up"), marker("waiting")
    gateway = site.gateway
    await _decided(gateway, loud_ok, "agent:shouter", "approve")
    await _decided(gateway, loud_no, "agent:shouter", "deny", message="too loud")
    await _decided(gateway, quiet, "agent:planner", "respond", message="done already")
    async with calls(gateway) as held_calls:
        await _cancelled(held_calls, gave_up)
        held_calls.start(waiting, "agent:planner")
        await sign_in(page, site.url)
        await expect(card(page, waiting)).to_be_visible()
        mine = [past(page, t) for t in (loud_ok, loud_no, quiet, gave_up)]
        for item in mine:
            await expect(item).to_be_visible()

        async def shown(*visible: bool) -> None:
            for item, yes in zip([*mine, card(page, waiting)], visible, strict=True):
                await (expect(item).to_be_visible() if yes else expect(item).to_be_hidden())

        await page.fill("#f-rule", "loud")
        await shown(True, True, False, False, False)
        await page.select_option("#f-state", "denied")
        await shown(False, True, False, False, False)
        await expect(page.locator("#history-count")).to_contain_text("Showing 1 of 1 matching")
        await page.fill("#f-tool", "e__echo")
        await shown(False, True, False, False, False)
        await page.fill("#f-server", "elsewhere")
        await shown(False, False, False, False, False)
        await page.click("#filters button[type=reset]")
        await page.select_option("#f-state", "cancelled")
        await shown(False, False, False, True, False)
        await page.select_option("#f-state", "answered")
        await shown(False, False, True, False, False)
        await page.select_option("#f-state", "pending")
        await shown(False, False, False, False, True)
        await page.select_option("#f-state", "decided")
        await page.fill("#f-caller", "PLANNER")
        await shown(False, False, True, False, False)
        await page.click("#filters button[type=reset]")
        await page.fill("#filter", "too loud")
        await shown(False, True, False, False, False)
        await page.fill("#filter", "")
        await page.fill("#f-rule", "loud")
        await screenshot(page, "approvals-history.png")
        await page.click("#filters button[type=reset]")
        await shown(True, True, True, True, True)
        await card(page, waiting).locator("button.approve").click()
    rules = await page.locator("#f-rule-list option").evaluate_all("os => os.map(o => o.value)")
    assert sorted(rules) == ["echo-needs-approval", "loud-echo"]


async def test_history_shows_twenty_items_at_a_time_newest_first(site: Site, page: Page) -> None:
    texts = [marker(f"batch-{n:02d}") for n in range(22)]
    for text in texts:
        await _decided(site.gateway, text, "agent:batch", "deny")
    await sign_in(page, site.url)
    await page.fill("#f-caller", "agent:batch")
    items = page.locator("#history-list li.past:visible")
    await expect(items).to_have_count(20)
    await expect(items.first).to_contain_text(texts[-1])
    await expect(page.locator("#history-count")).to_contain_text("Showing 20 of 22 matching")
    await page.click("#history-more")
    await expect(items).to_have_count(22)
    await expect(page.locator("#history-more")).to_be_hidden()
