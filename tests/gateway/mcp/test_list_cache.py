"""``tools/list`` on the fast paths (`gateway/mcp/listings.py`): answered as the SDK answers it, in
both eras and on both faces, from a serialization cached per listing, which never shows a tool a
caller may not see and follows every change of what it may see (a new upstream tool, a policy
reload, a session gate opened by a call).

Each test checks which path answered (``lockgate_mcp_requests_total{path}``): a ``progressToken``
in ``params._meta`` sends a listing to the SDK, which is what the fast path is compared with.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_faces import MODERN
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from support import answered, echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.mcp.server import build_server
from gateway.mcp.stdio_fast_path import StdioFastPath
from tests.gateway.mcp.test_http_fast_path import CLIENT_INFO, Raw, answer
from tests.gateway.mcp.test_stdio_fast_path import Wire
from toolsets.context import ANONYMOUS, Principal

ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: no-weather-for-interns
    tools: [echo__weather]
    principals: ['role:intern']
    effect: hide
  - id: whoami-after-echo
    tools: [echo__whoami]
    unlock_after: [echo__echo]
    effect: allow
"""
RELOADED = POLICY + "  - id: fail-hidden\n    tools: [echo__fail]\n    effect: hide\n"
INTERN = Principal(id="ivy", roles=frozenset({"intern"}))
STAFF = Principal(id="sam", roles=frozenset({"staff"}))
PROGRESS = {"progressToken": "to-the-sdk"}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """An echo upstream with 100 extra tools behind `POLICY` (one test's own: they change it)."""
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    policies = {"files": [str(tmp_path / "policy.yaml")]}
    return write_config(tmp_path, [echo_upstream(tools=100)], policies=policies)


@pytest.fixture
def agents_config(config: Path) -> Path:
    """`config` with agent tokens: ``sam`` (staff) and ``ivy`` (intern)."""
    agents = [
        {"id": STAFF.id, "token": "sam-token", "roles": ["staff"]},
        {"id": INTERN.id, "token": "ivy-token", "roles": ["intern"]},
    ]
    policies = {"files": [str(config.parent / "policy.yaml")]}
    servers = [echo_upstream(tools=100)]
    return write_config(config.parent, servers, policies=policies, auth={"agents": agents})


@pytest.fixture
async def gateway(config: Path) -> AsyncIterator[Gateway]:
    async with Gateway.from_config(config) as gw:
        yield gw


@contextlib.asynccontextmanager
async def stdio(gateway: Gateway, era: str, principal: Principal) -> AsyncIterator[Wire]:
    """One stdio connection (its own session) of ``principal``, served in-process."""
    send, receive = anyio.create_memory_object_stream[bytes](100)
    wire = Wire(era, send)
    server = build_server(gateway, transport="stdio", principal=principal)
    path = StdioFastPath(server, gateway.metrics)

    async def lines() -> AsyncIterator[bytes]:
        async with receive:
            async for line in receive:
                yield line

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(path.serve, lines(), wire.write)
            try:
                yield await wire.open()
            finally:
                await send.aclose()


async def listed(wire: Wire, id: int, meta: dict[str, Any] | None = None) -> list[str]:
    """The names a stdio listing shows (``meta``: its ``_meta``)."""
    await wire.request(id, "tools/list", {"_meta": dict(meta)} if meta else {})
    return [tool["name"] for tool in (await wire.answer(id))["result"]["tools"]]


def without_id(message: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in message.items() if key != "id"}


@ERAS
async def test_a_stdio_listing_is_the_sdks(gateway: Gateway, era: str) -> None:
    async with stdio(gateway, era, STAFF) as wire:
        with answered(gateway.metrics, "stdio", fast=2, sdk=1):
            await wire.request(11, "tools/list", {})
            fast = await wire.answer(11)
            await wire.request(12, "tools/list", {"_meta": dict(PROGRESS)})
            sdk = await wire.answer(12)
            await wire.request(13, "tools/list", {})
            again = await wire.answer(13)

    assert without_id(fast) == without_id(sdk) == without_id(again)
    assert len(fast["result"]["tools"]) > 100


async def list_http(raw: Raw, id: int, meta: dict[str, Any] | None = None) -> httpx2.Response:
    """POST ``tools/list`` in ``raw``'s era."""
    meta = dict(meta or {})
    if raw.era == "modern":
        meta[PROTOCOL_VERSION_META_KEY] = MODERN
        meta[CLIENT_CAPABILITIES_META_KEY] = {}
        meta[CLIENT_INFO_META_KEY] = CLIENT_INFO
    body = {"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta}}
    return await raw.http.post(raw.url, json=body, headers=raw.headers("tools/list"))


@ERAS
async def test_an_http_listing_is_the_sdks(config: Path, era: str) -> None:
    gateway = Gateway.from_config(config)
    async with serve_asgi(build_app(gateway)) as base, httpx2.AsyncClient() as http:
        raw = await Raw(http, f"{base}/mcp", era).open()
        with anyio.fail_after(30), answered(gateway.metrics, "http", fast=2, sdk=1):
            fast = await list_http(raw, 11)
            sdk = await list_http(raw, 12, PROGRESS)
            again = await list_http(raw, 13)

    assert fast.status_code == sdk.status_code == 200
    assert fast.headers["content-type"] == "application/json"
    assert without_id(answer(fast)) == without_id(answer(sdk)) == without_id(answer(again))
    assert fast.headers.get("mcp-session-id") == sdk.headers.get("mcp-session-id") == raw.session


@ERAS
async def test_each_agent_lists_over_http_what_the_sdk_shows_it(
    agents_config: Path, era: str
) -> None:
    gateway = Gateway.from_config(agents_config)
    names: dict[str, list[str]] = {}
    async with serve_asgi(build_app(gateway)) as base, httpx2.AsyncClient() as http:
        for token in ["sam-token", "ivy-token", "sam-token", "ivy-token"]:
            raw = await Raw(http, f"{base}/mcp", era, token=token).open()
            with anyio.fail_after(30), answered(gateway.metrics, "http", fast=1, sdk=1):
                fast = answer(await list_http(raw, 11))
                sdk = answer(await list_http(raw, 12, PROGRESS))
            assert without_id(fast) == without_id(sdk)
            names[token] = [tool["name"] for tool in fast["result"]["tools"]]

    assert "echo__weather" in names["sam-token"]
    assert set(names["ivy-token"]) == set(names["sam-token"]) - {"echo__weather"}


@ERAS
async def test_a_hidden_tool_never_appears_whoever_listed_first(gateway: Gateway, era: str) -> None:
    for first, second in [(STAFF, INTERN), (INTERN, STAFF), (STAFF, INTERN)]:
        async with stdio(gateway, era, first) as one, stdio(gateway, era, second) as two:
            with answered(gateway.metrics, "stdio", fast=2, sdk=0):
                seen = {first.id: await listed(one, 11), second.id: await listed(two, 11)}
        assert "echo__weather" in seen[STAFF.id]
        assert "echo__weather" not in seen[INTERN.id]
        assert set(seen[INTERN.id]) == set(seen[STAFF.id]) - {"echo__weather"}


@ERAS
async def test_a_session_gate_opened_by_a_call_shows_its_tool_in_that_session_only(
    gateway: Gateway, era: str
) -> None:
    async with stdio(gateway, era, STAFF) as one, stdio(gateway, era, STAFF) as two:
        assert "echo__whoami" not in await listed(one, 11)
        assert "echo__whoami" not in await listed(two, 11)
        await one.request(12, "tools/call", {"name": "echo__echo", "arguments": {"text": "hi"}})
        await one.answer(12)
        with answered(gateway.metrics, "stdio", fast=3, sdk=1):
            assert "echo__whoami" in await listed(one, 13)
            assert await listed(one, 14) == await listed(one, 15, PROGRESS)
            assert "echo__whoami" not in await listed(two, 13)


@ERAS
async def test_a_policy_reload_changes_the_next_listing(
    gateway: Gateway, era: str, tmp_path: Path
) -> None:
    async with stdio(gateway, era, STAFF) as wire:
        assert "echo__fail" in await listed(wire, 11)
        (tmp_path / "policy.yaml").write_text(RELOADED, encoding="utf-8")
        assert gateway.policy.reload() == []
        assert "echo__fail" not in await listed(wire, 12)
        assert await listed(wire, 13) == await listed(wire, 14, PROGRESS)


@ERAS
async def test_a_new_upstream_tool_is_in_the_next_listing(gateway: Gateway, era: str) -> None:
    changed = anyio.Event()

    async def on_changed(source: str) -> None:
        changed.set()

    gateway.on_tools_changed(on_changed)
    async with stdio(gateway, era, ANONYMOUS) as wire:
        before = await listed(wire, 11)
        await wire.request(12, "tools/call", {"name": "echo__add_tool", "arguments": {}})
        added = "echo__" + (await wire.answer(12))["result"]["content"][0]["text"]
        with anyio.fail_after(30):
            while added not in await gateway.tools():  # a change announced, then re-listed
                await changed.wait()
                changed = anyio.Event()
        after = await listed(wire, 13)

    assert added not in before
    assert set(after) == {*before, added}


CLAIMS_POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: weather-for-hr-only
    tools: [echo__weather]
    unless: principal.claims.department == "hr"
    effect: hide
"""


async def test_callers_alike_but_for_their_claims_each_see_what_their_claims_allow(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.yaml").write_text(CLAIMS_POLICY, encoding="utf-8")
    policies = {"files": [str(tmp_path / "policy.yaml")]}
    config = write_config(tmp_path, [echo_upstream()], policies=policies)
    hr = Principal(id="pat", claims={"department": "hr"})
    ops = Principal(id="pat", claims={"department": "ops"})
    async with Gateway.from_config(config) as gateway:
        async with stdio(gateway, "modern", hr) as wire:
            seen_by_hr = await listed(wire, 11)
        async with stdio(gateway, "modern", ops) as wire:
            seen_by_ops = await listed(wire, 11)
    assert "echo__weather" in seen_by_hr
    assert "echo__weather" not in seen_by_ops
