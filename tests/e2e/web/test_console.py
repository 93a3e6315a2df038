"""The operator console at ``/console`` against a served gateway with a stdio echo upstream:
operators (approvers with the role ``operator``) see each section's real data at phone width;
agents and approvers without the role get 403 and no data."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from playwright.async_api import Browser, Page, expect
from support import echo_upstream, serve_asgi, write_config
from web_support import (
    HERE,
    Site,
    approver_api,
    console_page,
    console_site,
    decided_call,
    marker,
    screenshot,
)

from gateway import Gateway
from gateway.http.app import build_app
from toolsets import CallContext, Principal

OPERATOR_TOKEN = "operator-token-for-tests"
PLAIN_TOKEN = "plain-approver-token-for-tests"
AGENT_TOKEN = "agent-token-for-tests"
PHONE = 390
CANDIDATE = """version: 1
defaults: {effect: allow}
rules:
  - {id: no-echo, tools: [e__echo], effect: deny, reason: "no echo any more"}
"""
ROUTES = [
    ("GET", "/api/console/upstreams"),
    ("GET", "/api/console/catalogue?principal=agent:x"),
    ("GET", "/api/console/policies"),
    ("POST", "/api/console/explain"),
    ("POST", "/api/console/replay"),
    ("GET", "/api/console/events"),
    ("GET", "/api/console/audit"),
    ("GET", "/api/console/audit/verify"),
    ("GET", "/api/console/sessions"),
]


@pytest.fixture(scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    auth = {
        "approvers": [
            {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator", "security"]},
            {"id": "user:pat", "token": PLAIN_TOKEN, "roles": ["security"]},
        ],
        "agents": [{"id": "agent:bot", "token": AGENT_TOKEN}],
    }
    async with console_site(tmp_path_factory.mktemp("console"), auth) as site:
        yield site


def _as(caller: str, session: str = "s-console", roles: tuple[str, ...] = ()) -> CallContext:
    return CallContext(principal=Principal(id=caller, roles=frozenset(roles)), session_id=session)


async def _open(browser: Browser, site: Site, token: str = OPERATOR_TOKEN) -> AsyncIterator[Page]:
    async with console_page(browser, site.url, token, width=PHONE) as page:
        yield page


@pytest.fixture
async def console(browser: Browser, site: Site) -> AsyncIterator[Page]:
    """The console at phone width, signed in as the operator."""
    async for page in _open(browser, site):
        await expect(page.locator("#status")).to_have_text("Signed in as user:olga (operator)")
        yield page
        await _fits(page)


async def _show(page: Page, section: str) -> None:
    """Open the console's ``section`` (its link in the sections bar)."""
    await page.locator(f'#sections a[href="#{section}"]').click()
    await expect(page.locator(f"#{section}")).to_be_visible()


async def _fits(page: Page) -> None:
    """Nothing is wider than the phone's screen."""
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("token", [AGENT_TOKEN, PLAIN_TOKEN], ids=["agent", "plain-approver"])
async def test_an_agent_or_an_approver_without_the_operator_role_gets_403_and_no_data(
    site: Site, token: str, method: str, path: str
) -> None:
    async with approver_api(site, token) as client:
        response = await client.request(method, path, json={} if method == "POST" else None)
    assert response.status_code == 403
    assert "items" not in response.json()
    assert "version" not in response.json()


async def test_the_console_refuses_a_missing_token_with_401(site: Site) -> None:
    async with httpx2.AsyncClient(base_url=site.url) as client:
        response = await client.get("/api/console/upstreams")
    assert response.status_code == 401


async def test_an_approver_without_the_operator_role_sees_no_console_section(
    browser: Browser, site: Site
) -> None:
    async for page in _open(browser, site, PLAIN_TOKEN):
        await expect(page.locator("#error")).to_contain_text("403")
        await expect(page.locator("#error")).to_contain_text("without the role 'operator'")
        await expect(page.locator("#console")).to_be_hidden()
        await expect(page.locator("#upstream-list li")).to_have_count(0)


async def test_upstreams_show_status_transport_era_tools_and_reconnects(
    site: Site, console: Page
) -> None:
    up = site.gateway.upstreams["e"]
    item = console.locator("#upstream-list li")
    await expect(item).to_have_count(1)
    await expect(item.locator("h3")).to_have_text("e — up")
    facts = f"transport stdio · era {up.protocol_version} · {len(up.tools)} tools"
    await expect(item).to_contain_text(facts)
    await expect(item).to_contain_text("reconnects 0")
    await expect(item).to_contain_text("no definition in quarantine")
    await screenshot(console, "console-upstreams.png")


async def test_the_catalogue_lists_what_the_chosen_principal_may_see(
    site: Site, console: Page
) -> None:
    await _show(console, "catalogue")
    for roles, hidden in (("", True), ("ops", False)):
        expected = await site.gateway.list_tools(
            _as("agent:dev", "x", tuple(filter(None, [roles])))
        )
        await console.fill("#catalogue-principal", "agent:dev")
        await console.fill("#catalogue-roles", roles)
        await console.click("#catalogue-form button")
        summary = f"agent:dev sees {len(expected)} tools"
        await expect(console.locator("#catalogue-summary")).to_have_text(summary)
        names = await console.locator("#catalogue-list h3").all_text_contents()
        assert names == sorted(t.name for t in expected)
        assert ("e__fail" not in names) is hidden
    await screenshot(console, "console-catalogue.png")


async def test_policies_show_the_layers_and_explain_a_call_as_policy_explain_does(
    site: Site, console: Page
) -> None:
    await _show(console, "policies")
    await expect(console.locator("#policy-version")).to_have_text(site.gateway.policy.version)
    layer = console.locator("#policy-layers li")
    await expect(layer.locator("h3")).to_have_text(str(HERE / "fixtures" / "console.yaml"))
    await expect(layer).to_contain_text("layer 0 · 3 rules · sha256 ")
    await console.fill("#explain-tool", "e__echo")
    await console.fill("#explain-principal", "agent:bot")
    await console.fill("#explain-args", '{"text": "ASK for it"}')
    await console.click("#explain-form button")
    out = console.locator("#explain-out")
    await expect(out).to_contain_text("effect:   ask")
    await expect(out).to_contain_text("rule:     ask-echo (")
    await expect(out).to_contain_text("reason:   asking echo needs security")
    await screenshot(console, "console-policies.png")


async def _replay_cli(audit: Path, candidate: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "gateway.cli", "policy", "replay", "--json"]
    done = await anyio.run_process([*command, "--audit", str(audit), str(candidate)])
    return dict(json.loads(done.stdout))


async def test_replay_lists_the_same_changed_calls_as_lockgate_policy_replay(
    site: Site, console: Page, tmp_path: Path
) -> None:
    for n in range(2):
        await site.gateway.call_tool("e__echo", {"text": marker(f"replayed-{n}")}, _as("agent:r"))
    await _show(console, "policies")
    await console.fill("#replay-policy", CANDIDATE)
    await console.click("#replay-form button")
    await expect(console.locator("#replay-summary")).to_contain_text("would be decided differently")
    candidate = tmp_path / "console.yaml"
    candidate.write_text(CANDIDATE, encoding="utf-8")
    audit = Path(site.gateway.config.resolve(site.gateway.config.events.audit.path))
    cli = await _replay_cli(audit, candidate)
    expected = [
        f"{r['old_effect']} → {r['new_effect']} by {r['new_rule_id']} · {r['count']} calls"
        for r in cli["rows"]
    ]
    assert any(r["tool"] == "e__echo" and r["new_effect"] == "deny" for r in cli["rows"])
    summary = f"{cli['calls']} recorded calls, {cli['changed']} would be decided differently"
    await expect(console.locator("#replay-summary")).to_contain_text(summary)
    await expect(console.locator("#replay-rows .facts")).to_have_text(expected)
    await screenshot(console, "console-replay.png")


async def test_the_live_event_stream_shows_new_calls_and_filters_them_by_text(
    site: Site, console: Page
) -> None:
    await _show(console, "events")
    await console.fill("#events-types", "tool.*")
    await console.click("#events-form button")
    await expect(console.locator("#live")).to_have_text("live")
    caller, other = marker("agent:watched"), marker("agent:other")
    await site.gateway.call_tool("e__echo", {"text": "hello"}, _as(caller))
    await site.gateway.call_tool("e__echo", {"text": "hello"}, _as(other))
    events = console.locator("#event-list li")
    await expect(events.filter(has_text=caller).first).to_be_visible()
    await expect(events.filter(has_text=other).first).to_be_visible()
    await console.fill("#events-text", caller)
    await expect(events.filter(has_text=other).first).to_be_hidden()
    await expect(events.filter(has_text=caller).first).to_contain_text("e__echo")
    assert not await events.filter(has_text="upstream.").count()  # the type filter held
    await screenshot(console, "console-events.png")


async def test_the_audit_log_shows_the_last_entries_and_verifies_its_chain(
    site: Site, console: Page
) -> None:
    caller = marker("agent:audited")
    await site.gateway.call_tool("e__echo", {"text": "on record"}, _as(caller))
    await _show(console, "audit")
    await console.click("#audit-refresh")
    entry = console.locator("#audit-list li", has_text=f"tool.call e__echo · {caller}")
    await expect(entry).to_have_count(1)
    await console.click("#audit-verify")
    await expect(console.locator("#audit-verdict")).to_have_text(
        re.compile(r"^Chain verified: \d+ entries intact$")
    )
    await screenshot(console, "console-audit.png")


async def test_sessions_show_their_calls_labels_and_gates(site: Site, console: Page) -> None:
    caller = marker("agent:sessioned")
    await site.gateway.call_tool("e__whoami", {}, _as(caller, "s-gates"))
    await _show(console, "sessions")
    await console.click("#sessions-refresh")
    item = console.locator("#session-list li", has_text=caller)
    await expect(item.locator("h3")).to_have_text(f"{caller} · session s-gates")
    await expect(item).to_contain_text("labels: private")
    await expect(item).to_contain_text("e__weather: unlock_after open ('e__whoami' succeeded)")
    await expect(item).to_contain_text("last: e__whoami")
    await screenshot(console, "console-sessions.png")


async def test_grants_show_a_grant_made_on_an_approval(site: Site, console: Page) -> None:
    grant = {"scope": "tool", "duration": "30m", "principal": True}  # its caller only
    async with approver_api(site, OPERATOR_TOKEN) as api:
        await decided_call(site, api, "agent:granted", "ASK grant", decision="approve", grant=grant)
    await _show(console, "grants")
    await console.click("#grants-refresh")
    item = console.locator("#grant-list li", has_text="e__echo (tool)")
    await expect(item).to_contain_text("for agent:granted")
    await expect(item).to_contain_text("by user:olga · until ")
    await screenshot(console, "console-grants.png")


async def test_approvals_show_each_rules_outcomes_and_the_calls_waiting(
    site: Site, console: Page
) -> None:
    async with approver_api(site, OPERATOR_TOKEN) as api:
        await decided_call(site, api, "agent:counted", "ASK analytics", decision="approve")
    async with approver_api(site, OPERATOR_TOKEN) as api:
        stats = (await api.get("/api/analytics/approvals?since=7d")).json()
    group = stats["by_rule"]["ask-echo"]
    assert group["counts"]["approve"] >= 1
    await _show(console, "analytics")
    await console.click("#analytics-refresh")
    await expect(console.locator("#analytics-waiting")).to_have_text(
        f"{stats['waiting']} calls waiting now"
    )
    item = console.locator("#analytics-rules li", has_text="ask-echo")
    held_line = (
        f"{group['held']} held · {group['pending']} waiting · approve {group['counts']['approve']}"
    )
    await expect(item).to_contain_text(held_line)
    await expect(item).to_contain_text("time to decision p50 ")
    await expect(console.locator("#analytics-none")).to_be_visible()  # 5 approvals make one
    await screenshot(console, "console-approvals.png")


async def test_upstreams_name_a_changed_definition_waiting_in_quarantine(
    site: Site, console: Page
) -> None:
    """After the tests listing e__weather: the rug pull leaves it quarantined."""
    async with site.gateway.events.subscribe(["tool.pin_changed"]) as changes:
        await site.gateway.call_tool("e__rug_pull", {"part": "description"})
        await anext(changes)
    await console.click("#upstreams-refresh")
    item = console.locator("#upstream-list li")
    await expect(item).to_contain_text("quarantined: e__weather")
    await screenshot(console, "console-upstreams-quarantine.png")


async def _status(statuses: AsyncIterator[Any], server: str, *wanted: str) -> str:
    """The next status of ``server`` among ``wanted``, as its ``upstream.status`` event says."""
    with anyio.fail_after(60):
        async for event in statuses:
            if event.data["server"] == server and event.data["status"] in wanted:
                return str(event.data["status"])
    raise AssertionError("the event stream ended")


def _kill_upstream(name: str) -> None:
    """Kill this process's stdio echo server started as ``--name name`` (the upstream dies)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
        named = b"--name" in argv and argv[argv.index(b"--name") + 1] == name.encode()
        if named and int(parent) == os.getpid():
            os.kill(int(pid), signal.SIGKILL)
            return
    raise AssertionError(f"no echo server named {name!r} runs under this test")


async def test_upstreams_count_a_reconnect_and_keep_the_last_error(tmp_path: Path) -> None:
    name = marker("rc")
    operator = {"id": "user:olga", "token": OPERATOR_TOKEN, "roles": ["operator"]}
    config = write_config(
        tmp_path,
        [echo_upstream(name)],
        approvals={"store": "memory"},
        events={"audit": {"enabled": False}},
        auth={"approvers": [operator]},
    )
    gateway = Gateway.from_config(config)
    async with (
        serve_asgi(build_app(gateway)) as url,
        gateway.events.subscribe(["upstream.status"]) as statuses,
        approver_api(Site(url, gateway), OPERATOR_TOKEN) as api,
    ):
        assert await gateway.wait_ready(30)
        before = (await api.get("/api/console/upstreams")).json()["items"][0]
        _kill_upstream(name)
        await _status(statuses, name, "down", "reconnecting")
        await _status(statuses, name, "up")
        after = (await api.get("/api/console/upstreams")).json()["items"][0]
    assert (before["reconnects"], before["last_error"]) == (0, None)
    assert after["status"] == "up"
    assert after["reconnects"] == 1
    assert after["last_error"]
    assert after["last_error_at"] is not None


async def test_a_candidate_policy_with_an_error_is_refused_naming_its_line(site: Site) -> None:
    broken = "version: 1\nrules:\n  - {id: odd, tools: [e__echo], effect: maybe}\n"
    async with approver_api(site, OPERATOR_TOKEN) as api:
        response = await api.post("/api/console/replay", json={"policy": broken})
        missing = await api.post("/api/console/replay", json={"policy": CANDIDATE, "layer": 3})
    assert response.status_code == 400
    assert response.json()["detail"].startswith("candidate console.yaml:3:33: rules.0.effect: ")
    assert missing.status_code == 400
    assert missing.json()["detail"] == "layer 3 does not exist: the policy has 1"
