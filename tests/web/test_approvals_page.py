"""The approvals web page in a real browser (Debian chromium driven by Playwright)."""

from __future__ import annotations

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


async def _held_call(gateway: Gateway, text: str, results: list[Any]) -> None:
    ctx = CallContext(principal=Principal(id="agent:web-test"))
    results.append(await gateway.call_tool("e__echo", {"text": text}, ctx))


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
