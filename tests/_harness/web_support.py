"""Helpers of the approvals page suite: the gateway config, held calls, the page in Chromium.

Imported by module name (``import web_support``): pytest puts this directory on ``sys.path``.
Every peer is real: the gateway under uvicorn on 127.0.0.1 with a stdio echo upstream, Debian's
chromium driven by Playwright, and calls made in-process or by `mcp.Client` over HTTP.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from paths import REPO, TESTS
from playwright.async_api import Browser, Locator, Page, expect
from support import echo_upstream, serve_asgi, write_config

from gateway import Gateway
from gateway.http.app import build_app
from toolsets import CallContext, Principal, ToolResult

HERE = TESTS / "e2e" / "web"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAVE_CHROMIUM = Path(CHROMIUM).exists()
SCREENSHOTS = REPO / "docs" / "screenshots"

ALICE = "user:alice"
ALICE_TOKEN = "approver-token-for-tests"
"""An approver with role ``security``: decides every held call of the suite's policies."""
BOB = "user:bob"
BOB_TOKEN = "bob-token-for-tests"
"""A second ``security`` approver (the second vote of a two-vote stage)."""
CAROL = "user:carol"
CAROL_TOKEN = "carol-token-for-tests"
"""An ``oncall`` approver: may break glass where a rule says so."""
CTO = "user:cto"
CTO_TOKEN = "cto-token-for-tests"
"""The approver of the last stage of a staged call."""
APPROVERS = [
    {"id": ALICE, "token": ALICE_TOKEN, "roles": ["security"]},
    {"id": BOB, "token": BOB_TOKEN, "roles": ["security"]},
    {"id": CAROL, "token": CAROL_TOKEN, "roles": ["oncall"]},
    {"id": CTO, "token": CTO_TOKEN},
]


def web_config(directory: Path, *policies: str) -> Path:
    """A gateway config: the echo upstream as ``e``, the named policy files of ``fixtures/``
    copied to ``policies/`` beside it (named relative to it, as a deployment does), pending
    calls in memory, the suite's approvers."""
    (directory / "policies").mkdir(exist_ok=True)
    for name in policies:
        shutil.copyfile(HERE / "fixtures" / name, directory / "policies" / name)
    return write_config(
        directory,
        [echo_upstream("e")],
        policies={"files": [f"policies/{name}" for name in policies]},
        approvals={"store": "memory"},
        auth={"approvers": APPROVERS},
    )


def console_config(directory: Path, auth: dict[str, Any], policy: str = "console.yaml") -> Path:
    """A console suite's gateway config: the echo upstream as ``e``, the policy file ``policy``
    of ``fixtures/``, pending calls in memory, the audit log in ``directory``, and ``auth``."""
    return write_config(
        directory,
        [echo_upstream("e")],
        policies={"files": [str(HERE / "fixtures" / policy)]},
        approvals={"store": "memory"},
        events={"audit": {"path": str(directory / "audit.db")}},
        auth=auth,
    )


async def open_console(page: Page, url: str, token: str) -> None:
    """Sign in to the console at ``url`` with ``token`` (with the mouse)."""
    await page.goto(f"{url}/console")
    await page.fill("#token", token)
    await page.click("#login button")


def marker(label: str) -> str:
    """A value no other test uses: a test's cards are told apart from earlier tests' ones."""
    return f"{label}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Site:
    """The gateway a test module shares, and its base URL."""

    url: str
    gateway: Gateway


@dataclass
class Calls:
    """Held calls made in a task group; ``results[text]`` is each one's outcome."""

    gateway: Gateway
    tg: anyio.abc.TaskGroup
    results: dict[str, ToolResult] = field(default_factory=dict)

    def start(
        self, text: str, caller: str = "agent:web-test", *, tool: str = "e__echo", **ctx: Any
    ) -> None:
        """Call ``tool`` (``{"text": text}`` for echo) as ``caller`` in the background."""
        self.tg.start_soon(self._call, tool, text, caller, ctx)

    async def _call(self, tool: str, text: str, caller: str, ctx: dict[str, Any]) -> None:
        roles = frozenset(ctx.pop("roles", ()))
        context = CallContext(principal=Principal(id=caller, roles=roles), **ctx)
        args = {"text": text} if tool == "e__echo" else ctx.pop("args", {})
        self.results[text] = await self.gateway.call_tool(tool, args, context)


@contextlib.asynccontextmanager
async def console_site(directory: Path, auth: dict[str, Any]) -> AsyncIterator[Site]:
    """A console suite's gateway (`console_config` in ``directory``) served under uvicorn, once
    ready."""
    gateway = Gateway.from_config(console_config(directory, auth))
    async with serve_asgi(build_app(gateway)) as url:
        assert await gateway.wait_ready(30)
        yield Site(url, gateway)


@contextlib.asynccontextmanager
async def calls(gateway: Gateway) -> AsyncIterator[Calls]:
    """Make held calls in the background; the block ends once every one was answered."""
    async with anyio.create_task_group() as tg:
        yield Calls(gateway, tg)


async def held(gateway: Gateway, text: str) -> str:
    """The id of the pending call echoing ``text``, once the gateway holds it."""
    async with gateway.events.subscribe(["tool.approval.requested"]) as requested:
        with anyio.fail_after(15):
            while True:
                for call in await gateway.store.list(state=["pending"]):
                    if call.args.get("text") == text:
                        return call.id
                await anext(requested)


async def decided_call(
    site: Site, api: httpx2.AsyncClient, caller: str, label: str, **body: Any
) -> None:
    """One asking echo call of ``caller`` (a new `marker` of ``label`` as its text: the same
    call again would re-issue a decided one), held and decided over ``api`` with ``body``; the
    block ends once the call was answered."""
    text = marker(label)
    async with calls(site.gateway) as held_calls:
        held_calls.start(text, caller)
        id = await held(site.gateway, text)
        response = await api.post(f"/api/approvals/{id}/decision", json=body)
        assert response.status_code == 200, response.text


@contextlib.asynccontextmanager
async def approver_api(site: Site, token: str = ALICE_TOKEN) -> AsyncIterator[httpx2.AsyncClient]:
    """A REST client of ``site`` as the approver holding ``token``."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(base_url=site.url, headers=headers, timeout=30) as client:
        yield client


@contextlib.asynccontextmanager
async def new_page(browser: Browser, width: int = 1000) -> AsyncIterator[Page]:
    """A tab in a fresh browser context (its own storage, so its own sign-in)."""
    context = await browser.new_context(viewport={"width": width, "height": 900})
    try:
        yield await context.new_page()
    finally:
        await context.close()


@contextlib.asynccontextmanager
async def console_page(
    browser: Browser, url: str, token: str, width: int = 390
) -> AsyncIterator[Page]:
    """A `new_page` ``width`` wide (a phone's by default) signed in to the console at ``url``
    with ``token``."""
    async with new_page(browser, width=width) as page:
        await open_console(page, url, token)
        yield page


async def sign_in(page: Page, url: str, token: str = ALICE_TOKEN) -> None:
    await page.goto(f"{url}/approvals")
    await page.fill("#token", token)
    await page.click("#login button")
    await expect(page.locator("#live")).to_have_text("live", timeout=15_000)


def card(page: Page, text: str) -> Locator:
    """The waiting card of the echo call of ``text``."""
    return page.locator("li.call", has_text=f'"text": "{text}"')


def past(page: Page, text: str) -> Locator:
    """The History item of the echo call of ``text``."""
    return page.locator("#history-list li.past", has_text=f'"text": "{text}"')


async def screenshot(page: Page, name: str) -> None:
    """Refresh ``docs/screenshots/NAME`` when ``LOCKGATE_SCREENSHOTS=1``."""
    if os.environ.get("LOCKGATE_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


TRICKY = "<img src=x onerror=alert(1)>\u202egnp.exe"
"""Markup and a right-to-left override: shown as text, the override as ``\\u202e``."""
