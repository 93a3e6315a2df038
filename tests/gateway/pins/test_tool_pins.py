"""Durable tool pins: a definition changed upstream (at run time or while the gateway was down)
is quarantined until an approver accepts it; the change is announced with its diff.

Real parts: the echo server over stdio (its ``rug_pull`` tool and ``--rug`` option change the
``weather`` tool), the gateway's HTTP app under uvicorn, `mcp.Client` in both eras, the REST API
with approver and agent tokens, the pins in the SQLite file of the pending store.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_faces import (
    DOWNSTREAM_AUTHORIZATION,
    LEGACY,
    Face,
    lockgate,
    open_client,
    open_face,
)
from mcp import Client
from support import echo_upstream, serve_asgi, write_config

from gateway.audit.log import AuditLog
from gateway.events.model import Event
from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import CallContext, Principal
from toolsets.errors import ToolNotFoundError, ToolQuarantined

ALICE, BOB, AGENT = "alice-token", "bob-token", "downstream-client-secret"
WEATHER = "echo__weather"
CHANGED = {
    "description": "your location is sent",
    "schema": "home_address",
    "ui": "ui://echo/weather/evil.html",
}
FIELDS = {"description": ["description"], "schema": ["inputSchema"], "ui": ["_meta", "_meta.ui"]}


def _config(
    tmp_path: Path, *, era: str = "dual", rug: str | None = None, agents: bool = True, **pins: Any
) -> Path:
    upstream = echo_upstream(era=era)
    if rug is not None:
        upstream["args"] += ["--rug", rug]
    auth = {
        "agents": [{"id": "agent:bot", "token": AGENT}] if agents else [],
        "approvers": [
            {"id": "user:alice", "token": ALICE, "roles": ["security"]},
            {"id": "user:bob", "token": BOB},
        ],
    }
    return write_config(
        tmp_path,
        [upstream],
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"path": str(tmp_path / "audit.db")}},
        pins={"approvers": ["role:security"], **pins},
        auth=auth,
    )


@contextlib.asynccontextmanager
async def _served(config: Path) -> AsyncIterator[tuple[Gateway, str]]:
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base:
        yield gateway, base


def _api(base: str, token: str) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(base_url=base, headers=headers, timeout=30)


async def _names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def _rug_pull(gateway: Gateway, client: Client, part: str) -> Event:
    async with gateway.events.subscribe(["tool.pin_changed"]) as changes:
        await client.call_tool("echo__rug_pull", {"part": part})
        with anyio.fail_after(60):
            return await anext(changes)


HTTP_LEGACY, HTTP_MODERN = Face("http", "legacy"), Face("http", "auto")
RUNTIME = [
    pytest.param(HTTP_LEGACY, "legacy", "description", id="http-legacy-description"),
    pytest.param(HTTP_MODERN, "modern", "description", id="http-modern-description"),
    pytest.param(HTTP_LEGACY, "modern", "schema", id="http-legacy-schema"),
    pytest.param(HTTP_MODERN, "legacy", "schema", id="http-modern-schema"),
    pytest.param(HTTP_LEGACY, "dual", "ui", id="http-legacy-mcp-app-ui"),
    pytest.param(HTTP_MODERN, "dual", "ui", id="http-modern-mcp-app-ui"),
]
"""Client era x upstream era x what changes: each era on each side, each change."""


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize(("face", "upstream_era", "part"), RUNTIME)
async def test_a_run_time_change_is_quarantined_until_an_approver_accepts_it(
    tmp_path: Path, face: Face, upstream_era: str, part: str
) -> None:
    config = _config(tmp_path, era=upstream_era)
    async with (
        _served(config) as (gateway, base),
        open_client(face, config=config, url=f"{base}/mcp") as client,
        _api(base, ALICE) as alice,
    ):
        assert WEATHER in await _names(client)
        changed = await _rug_pull(gateway, client, part)
        assert changed.data["action"] == "quarantine"
        assert changed.data["name"] == WEATHER
        assert changed.data["fields"] == FIELDS[part]
        assert CHANGED[part] in changed.data["diff"]
        assert WEATHER not in await _names(client)
        refused = await client.call_tool(WEATHER, {"city": "Oslo"})
        assert refused.is_error
        assert "changed upstream" in _text(refused)

        listed = (await alice.get("/api/pins")).json()["items"]
        assert [(p["name"], p["state"]) for p in listed] == [(WEATHER, "quarantined")]
        shown = (await alice.get(f"/api/pins/{WEATHER}")).json()
        assert CHANGED[part] in shown["diff"]
        stale = await alice.post(f"/api/pins/{WEATHER}/accept", json={"pin": shown["pin"]})
        assert stale.status_code == 409
        async with gateway.events.subscribe(["tool.pin_accepted"]) as accepted:
            ok = await alice.post(f"/api/pins/{WEATHER}/accept", json={"pin": shown["changed_pin"]})
            assert ok.status_code == 200, ok.text
            assert (await anext(accepted)).data["by"] == "user:alice"

        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert CHANGED[part] in str(tools[WEATHER].model_dump())
        served = await client.call_tool(WEATHER, {"city": "Oslo"})
        assert not served.is_error
    async with AuditLog(tmp_path / "audit.db") as audit:
        kinds = [entry.kind for entry in await audit.tail(50)]
    assert "tool.pin_changed" in kinds
    assert "tool.pin_accepted" in kinds


@pytest.mark.parametrize(
    "face", [Face("stdio", "legacy"), Face("stdio", "auto")], ids=["legacy", "modern"]
)
async def test_a_change_made_while_the_gateway_was_down_is_caught_at_start_up(
    tmp_path: Path, face: Face
) -> None:
    async with Gateway.from_config(_config(tmp_path, agents=False)) as gateway:
        assert WEATHER in await gateway.tools()  # pinned, on disk
    config = _config(tmp_path, rug="description", agents=False)
    async with Gateway.from_config(config) as gateway:
        assert WEATHER not in await gateway.tools()
        with pytest.raises(ToolQuarantined, match="description"):
            await gateway.call_tool(WEATHER, {"city": "Oslo"})
        assert [p.name for p in await gateway.pins.list()] == [WEATHER]
    async with open_face(face, config) as client:  # `lockgate stdio`, a process of its own
        assert WEATHER not in await _names(client)
        refused = await client.call_tool(WEATHER, {"city": "Oslo"})
        assert refused.is_error
        assert "waits for review" in _text(refused)


async def test_metadata_changes_warn_and_on_change_decides_the_rest(tmp_path: Path) -> None:
    config = _config(tmp_path, on_change="accept")
    face = HTTP_MODERN
    async with (
        _served(config) as (gateway, base),
        open_client(face, config=config, url=f"{base}/mcp") as client,
    ):
        changed = await _rug_pull(gateway, client, "meta")
        assert (changed.data["action"], changed.data["fields"]) == ("warn", ["_meta"])
        changed = await _rug_pull(gateway, client, "schema")
        assert changed.data["action"] == "accept"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "home_address" in tools[WEATHER].input_schema["properties"]
        assert await gateway.pins.list() == []


async def test_only_pin_approvers_see_pins_and_agents_are_forbidden(tmp_path: Path) -> None:
    config = _config(tmp_path)
    async with (
        _served(config) as (gateway, base),
        open_client(HTTP_LEGACY, config=config, url=f"{base}/mcp") as client,
        _api(base, BOB) as bob,
        _api(base, AGENT) as agent,
        httpx2.AsyncClient(base_url=base) as nobody,
    ):
        assert client.protocol_version == LEGACY
        await _rug_pull(gateway, client, "description")
        assert (await bob.get("/api/pins")).json() == {"items": []}
        assert (await bob.get(f"/api/pins/{WEATHER}")).status_code == 404
        accept = await bob.post(f"/api/pins/{WEATHER}/accept", json={"pin": "x"})
        assert accept.status_code == 404
        assert (await agent.get("/api/pins")).status_code == 403
        assert (await nobody.get("/api/pins")).status_code == 401
        assert DOWNSTREAM_AUTHORIZATION.endswith(AGENT)


async def test_the_cli_lists_diffs_and_accepts(tmp_path: Path) -> None:
    config = _config(tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return lockgate("pins", *args, "--url", base, "--token", ALICE)

    async with (
        _served(config) as (gateway, base),
        open_client(HTTP_MODERN, config=config, url=f"{base}/mcp") as client,
    ):
        empty = await anyio.to_thread.run_sync(cli, "list")
        assert empty.stdout.strip() == "no changed tool definitions in quarantine"
        await _rug_pull(gateway, client, "schema")
        listed = await anyio.to_thread.run_sync(cli, "list")
        assert listed.returncode == 0
        assert WEATHER in listed.stdout
        assert "inputSchema" in listed.stdout
        diff = await anyio.to_thread.run_sync(cli, "diff", WEATHER)
        assert '+      "home_address": {' in diff.stdout
        command = diff.stdout.strip().splitlines()[-1].removeprefix("accept with: lockgate pins ")
        accepted = await anyio.to_thread.run_sync(cli, *command.split())
        assert accepted.returncode == 0, accepted.stderr
        assert "accepted" in accepted.stdout
        again = await anyio.to_thread.run_sync(cli, *command.split())
        assert again.returncode != 0
        assert "409" in again.stderr
        assert WEATHER in await _names(client)


async def test_a_quarantined_tool_stays_unknown_to_callers_the_policy_hides_it_from(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\ndefaults: {effect: allow}\nrules:\n  - id: no-weather-for-interns\n"
        "    tools: [echo__weather]\n    principals: ['role:intern']\n    effect: hide\n",
        encoding="utf-8",
    )
    config = write_config(
        tmp_path,
        [echo_upstream()],
        approvals={"store": "memory"},
        policies={"files": [str(policy)]},
    )
    intern = CallContext(principal=Principal(id="agent:i", roles=frozenset({"intern"})))
    async with (
        Gateway.from_config(config) as gateway,
        gateway.events.subscribe(["tool.pin_changed"]) as changes,
    ):
        await gateway.call_tool("echo__rug_pull", {"part": "description"})
        with anyio.fail_after(20):
            await anext(changes)
        with pytest.raises(ToolQuarantined):
            await gateway.call_tool(WEATHER, {"city": "Oslo"})
        with pytest.raises(ToolNotFoundError) as unknown:
            await gateway.call_tool(WEATHER, {"city": "Oslo"}, intern)
        assert not isinstance(unknown.value, ToolQuarantined)
