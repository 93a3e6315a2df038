"""What the approvals page reads from the REST API besides the calls themselves: who is signed
in (``GET /api/me``) and whether a held call's caller is still waiting (``waiting``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from support import MODES
from web_support import ALICE, ALICE_TOKEN, CTO, CTO_TOKEN, Site, approver_api, held, marker

HOLD_NOT: Any = {"lockgate/hold": 0}
"""``_meta`` of a call whose caller waits for no decision: answered "pending" at once."""


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.fixture
async def api(site: Site) -> AsyncIterator[httpx2.AsyncClient]:
    async with approver_api(site) as client:
        yield client


@pytest.mark.parametrize(
    ("token", "me"),
    [
        pytest.param(ALICE_TOKEN, {"id": ALICE, "roles": ["security"], "tenant": None}, id="alice"),
        pytest.param(CTO_TOKEN, {"id": CTO, "roles": [], "tenant": None}, id="no-roles"),
    ],
)
async def test_api_me_names_the_tokens_principal_its_roles_and_tenant(
    site: Site, token: str, me: dict[str, Any]
) -> None:
    async with approver_api(site, token) as client:
        response = await client.get("/api/me")
    assert response.status_code == 200
    assert response.json() == me


async def test_api_me_refuses_an_unknown_token(site: Site) -> None:
    async with httpx2.AsyncClient(base_url=site.url) as client:
        response = await client.get("/api/me", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401


@pytest.mark.parametrize("mode", MODES)
async def test_a_held_call_is_waiting_while_its_request_is_open_and_not_once_answered_pending(
    site: Site, api: httpx2.AsyncClient, mode: str
) -> None:
    gone, open_ = marker("answered-pending"), marker("held-open")
    results: dict[str, types.CallToolResult] = {}
    async with Client(f"{site.url}/mcp", mode=mode) as client:
        answered = await client.call_tool("e__echo", {"text": gone}, meta=HOLD_NOT)
        assert "Not executed yet" in _text(answered)
        pending = await held(site.gateway, gone)
        after = (await api.get(f"/api/approvals/{pending}")).json()
        assert (after["state"], after["waiting"]) == ("pending", False)

        async def call() -> None:
            results[open_] = await client.call_tool("e__echo", {"text": open_})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            id = await held(site.gateway, open_)
            listed = (await api.get("/api/approvals", params={"state": "pending"})).json()
            waiting = {c["args"]["text"]: c["waiting"] for c in listed["items"]}
            assert waiting == {gone: False, open_: True}
            await api.post(f"/api/approvals/{id}/decision", json={"decision": "approve"})
        await api.post(f"/api/approvals/{pending}/decision", json={"decision": "deny"})
    assert _text(results[open_]) == open_
    assert (await api.get(f"/api/approvals/{id}")).json()["waiting"] is False
