"""Fixtures of the approvals page suite: one Chromium per run, one gateway per module, a fresh
browser context (its own tab storage, so its own sign-in) per test.

Module-scoped async fixtures rely on the session-scoped ``anyio_backend`` of ``tests/conftest.py``.
A module picks its policy files with a module-level ``POLICIES`` tuple.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, async_playwright
from support import serve_asgi
from web_support import CHROMIUM, HAVE_CHROMIUM, Site, new_page, web_config

from gateway import Gateway
from gateway.http.app import build_app

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    if not HAVE_CHROMIUM:
        pytest.skip("chromium is not installed")
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    async with new_page(browser) as opened:
        yield opened


@pytest.fixture(scope="module")
async def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Site]:
    policies = getattr(request.module, "POLICIES", ("policy.yaml",))
    gateway = Gateway.from_config(web_config(tmp_path_factory.mktemp("web"), *policies))
    async with serve_asgi(build_app(gateway)) as url:
        yield Site(url, gateway)
