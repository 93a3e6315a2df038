"""The operator console partitions by tenant as every other surface does: an operator of tenant
``acme`` sees only acme's calls, sessions, events, audit entries, replayed calls, approvals and
grants; an operator without a tenant sees only untenanted ones (``auth.*[].tenant``). Checked
through the REST routes the console reads, and once in the browser."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx2
import pytest
from events_e2e_support import watching
from playwright.async_api import Browser, expect
from support import serve_asgi
from web_support import Site, console_config, held, marker, new_page, open_console

from gateway import Gateway
from gateway.http.app import build_app
from toolsets import CallContext, Principal, ToolResult

ACME_TOKEN = "acme-operator-token-for-tests"
PLAIN_TOKEN = "untenanted-operator-token-for-tests"
TOKENS = {"acme": ACME_TOKEN, None: PLAIN_TOKEN}
CANDIDATE = """version: 1
defaults: {effect: allow}
rules:
  - {id: no-echo, tools: [e__echo], effect: deny, reason: "no echo any more"}
"""


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    roles = ["operator", "security"]
    approvers = [
        {"id": "user:tina", "token": ACME_TOKEN, "roles": roles, "tenant": "acme"},
        {"id": "user:olga", "token": PLAIN_TOKEN, "roles": roles},
    ]
    config = console_config(tmp_path_factory.mktemp("console-tenants"), {"approvers": approvers})
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as url:
        assert await gateway.wait_ready(30)
        yield Site(url, gateway)


@contextlib.asynccontextmanager
async def _operator(site: Site, tenant: str | None) -> AsyncIterator[httpx2.AsyncClient]:
    headers = {"Authorization": f"Bearer {TOKENS[tenant]}"}
    async with httpx2.AsyncClient(base_url=site.url, headers=headers, timeout=30) as client:
        yield client


def _as(caller: str, tenant: str | None, session: str = "s") -> CallContext:
    return CallContext(principal=Principal(id=caller, tenant=tenant), session_id=session)


async def _callers(site: Site, tool: str = "e__echo", **args: Any) -> dict[str | None, str]:
    """One call of ``tool`` by a fresh caller of acme and one by an untenanted caller."""
    callers = {tenant: marker(f"agent:{tenant or 'none'}") for tenant in TOKENS}
    for tenant, caller in callers.items():
        result = await site.gateway.call_tool(tool, args, _as(caller, tenant))
        assert not result.is_error
    return callers


async def _audit(site: Site, tenant: str | None, caller: str) -> list[dict[str, Any]]:
    """The console's audit entries for ``tenant``'s operator, once ``caller``'s call is among
    them (call events reach the log in the background, group-committed)."""
    async with _operator(site, tenant) as api:
        with anyio.fail_after(30):
            while True:
                items: list[dict[str, Any]] = (
                    await api.get("/api/console/audit?limit=500")
                ).json()["items"]
                if any(e["principal"] == caller for e in items):
                    return items
                await anyio.sleep(0.05)  # nothing signals an append; the log is polled


async def test_audit_entries_and_replayed_calls_are_the_operators_tenants_only(
    site: Site,
) -> None:
    callers = await _callers(site, text="hello")
    for tenant, caller in callers.items():
        items = await _audit(site, tenant, caller)
        assert {e["body"]["data"].get("tenant") for e in items} == {tenant}
        others = {c for t, c in callers.items() if t != tenant}
        assert not others & {e["principal"] for e in items}
        async with _operator(site, tenant) as api:
            report = (await api.post("/api/console/replay", json={"policy": CANDIDATE})).json()
        echoes = sum(1 for e in items if e["kind"] == "tool.call" and e["tool"] == "e__echo")
        (row,) = report["rows"]
        assert (row["tool"], row["count"]) == ("e__echo", echoes)


async def test_sessions_are_the_operators_tenants_only(site: Site) -> None:
    callers = await _callers(site, "e__whoami")
    for tenant, caller in callers.items():
        async with _operator(site, tenant) as api:
            rows = (await api.get("/api/console/sessions")).json()["items"]
        principals = {row["principal"] for row in rows}
        assert caller in principals
        assert not ({c for t, c in callers.items() if t != tenant} & principals)


async def test_the_event_stream_carries_the_operators_tenants_events_only(site: Site) -> None:
    async with (
        watching(site.url, ACME_TOKEN, "/api/console/events") as acme,
        watching(site.url, PLAIN_TOKEN, "/api/console/events") as untenanted,
    ):
        callers = await _callers(site, text="streamed")
        for seen, tenant in ((acme, "acme"), (untenanted, None)):

            def results_of(caller: str) -> Callable[[list[dict[str, Any]]], bool]:
                return lambda events: any(
                    e["type"] == "tool.result" and e["data"].get("principal") == caller
                    for e in events
                )

            with anyio.fail_after(30):
                await seen.until(results_of(callers[tenant]))
            # The untenanted call came first: its events would have arrived before acme's.
            assert {e["data"].get("tenant") for e in seen} == {tenant}


async def _call(site: Site, text: str, tenant: str | None, results: dict[str, ToolResult]) -> None:
    caller = f"agent:{tenant or 'none'}"
    results[text] = await site.gateway.call_tool("e__echo", {"text": text}, _as(caller, tenant))


async def test_held_calls_and_grants_are_the_operators_tenants_only(site: Site) -> None:
    texts = {tenant: marker(f"ASK {tenant or 'none'}") for tenant in TOKENS}
    results: dict[str, ToolResult] = {}
    async with anyio.create_task_group() as tg:
        for tenant, text in texts.items():
            tg.start_soon(_call, site, text, tenant, results)
        ids = {tenant: await held(site.gateway, text) for tenant, text in texts.items()}
        for tenant in TOKENS:
            async with _operator(site, tenant) as api:
                stats = (await api.get("/api/analytics/approvals?since=1h")).json()
                listed = [c["id"] for c in (await api.get("/api/approvals")).json()["items"]]
                assert stats["waiting"] == 1
                assert listed == [ids[tenant]]
                grant = {"scope": "tool", "duration": "30m", "principal": True}
                body = {"decision": "approve", "grant": grant}
                decided = await api.post(f"/api/approvals/{ids[tenant]}/decision", json=body)
                assert decided.status_code == 200, decided.text
    for tenant in TOKENS:
        async with _operator(site, tenant) as api:
            grants = (await api.get("/api/grants")).json()["items"]
        assert [g["principal"] for g in grants] == [f"agent:{tenant or 'none'}"]


async def test_the_console_page_of_a_tenants_operator_shows_that_tenant_only(
    browser: Browser, site: Site
) -> None:
    callers = await _callers(site, "e__whoami")
    await _audit(site, "acme", callers["acme"])
    async with new_page(browser, width=390) as page:
        await open_console(page, site.url, ACME_TOKEN)
        await expect(page.locator("#status")).to_contain_text("Signed in as user:tina")
        await page.locator('#sections a[href="#audit"]').click()
        await page.click("#audit-refresh")
        audit = page.locator("#audit-list")
        await expect(audit.locator("li", has_text=callers["acme"]).first).to_be_visible()
        await expect(audit.locator("li", has_text=callers[None])).to_have_count(0)
        await page.locator('#sections a[href="#sessions"]').click()
        await page.click("#sessions-refresh")
        sessions = page.locator("#session-list")
        await expect(sessions.locator("li", has_text=callers["acme"])).to_have_count(1)
        await expect(sessions.locator("li", has_text=callers[None])).to_have_count(0)
