"""Playwright (Debian ``chromium``) through the provider's dev login and consent pages."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = Path(CHROMIUM).exists()
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
TIMEOUT_MS = 60_000
"""Each page step may take this long on a loaded machine."""


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless Chromium (the test is skipped where Debian's ``chromium`` is missing)."""
    if not HAVE_CHROMIUM:
        pytest.skip("chromium is not installed")
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()


@contextlib.asynccontextmanager
async def new_page(browser: Browser) -> AsyncIterator[Page]:
    """A page in a fresh context: its own cookies, so its own sign-in at the provider."""
    context = await browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield await context.new_page()
    finally:
        await context.close()


async def browser_login(page_or_url: Page | str, user: str, password: str) -> str:
    """Sign ``user`` in at the provider and consent, from an authorization URL (or a page
    already on the provider's login page); returns the URL the provider redirected to (the
    client's redirect URI with ``code`` and ``state``, or an ``error``).

    Given a URL, a Chromium of its own is launched for the flow; given a page, the page is
    left on the redirect target. A wrong password raises `AssertionError`.
    """
    if isinstance(page_or_url, str):
        async with chromium() as browser, new_page(browser) as page:
            return await _login(page, page_or_url, user, password)
    return await _login(page_or_url, None, user, password)


async def _login(page: Page, url: str | None, user: str, password: str) -> str:
    if url is not None:
        await page.goto(url)
    if await page.locator("input[name=prompt][value=login]").count():
        await page.locator("input[name=login]").fill(user)
        await page.locator("input[name=password]").fill(password)
        await _submit(page)
        if await page.locator("p.error").count():
            raise AssertionError(f"the provider refused the login of {user!r}")
    if await page.locator("input[name=prompt][value=consent]").count():
        await _submit(page)
    return page.url


async def _submit(page: Page) -> None:
    """Submit the page's form and wait for where its redirects end."""
    async with page.expect_navigation():
        await page.locator("button[type=submit]").click()
