"""Deferred calls: a worker finds them on ``GET /api/calls`` and posts their result.

``lookup`` and ``lookup_later`` are ``external_tools`` of the config (no upstream at all);
``recorder__record_deferred`` is an upstream tool the policy defers (``effect: defer``), so the
worker answers it and the upstream never runs.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from approvals_e2e_support import (
    AGENT,
    WORKER,
    WORKER_TOKEN,
    Rig,
    agent_client,
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
    while_held,
)
from support import MODES

both_eras = pytest.mark.parametrize("mode", MODES)


async def _pending_external(worker: httpx2.AsyncClient, key: str, value: str) -> dict[str, Any]:
    return await wait_for_call(worker, value, key=key, path="/api/calls", kind="external")


async def _post(worker: httpx2.AsyncClient, id: str, **body: Any) -> httpx2.Response:
    return await worker.post(f"/api/calls/{id}/result", json=body)


@both_eras
async def test_a_worker_answers_a_held_external_call_with_a_value(rig: Rig, mode: str) -> None:
    customer = marker("customer")
    answer = {"name": "Ada Lovelace", "tier": "gold", "orders": [1, 2]}
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base, WORKER_TOKEN) as w:

        async def work() -> dict[str, Any]:
            call = await _pending_external(w, "customer", customer)
            response = await _post(w, call["id"], value=answer)
            assert response.status_code == 200, response.text
            return dict(response.json())

        with anyio.fail_after(20):
            result, record = await while_held(
                lambda: client.call_tool("lookup", {"customer": customer}), work
            )

    assert not result.is_error, result
    assert result.structured_content == answer
    assert json.loads(text_of(result)) == answer
    assert record["kind"] == "external"
    assert record["state"] == "done"
    assert record["principal"] == AGENT
    assert record["decided_by"] == WORKER
    assert record["channel"] == "worker"


@both_eras
async def test_a_worker_error_reaches_the_caller_as_a_tool_error(rig: Rig, mode: str) -> None:
    customer = marker("customer")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base, WORKER_TOKEN) as w:

        async def fail() -> dict[str, Any]:
            call = await _pending_external(w, "customer", customer)
            response = await _post(w, call["id"], error="CRM unavailable", retry_after=5)
            assert response.status_code == 200, response.text
            return dict(response.json())

        with anyio.fail_after(20):
            result, record = await while_held(
                lambda: client.call_tool("lookup", {"customer": customer}), fail
            )

    assert result.is_error
    assert text_of(result) == "CRM unavailable"
    assert record["state"] == "failed"
    assert record["error"] == "CRM unavailable"
    assert record["retry_after"] == 5


@both_eras
async def test_a_reissued_external_call_gets_the_result_posted_after_its_hold(
    rig: Rig, mode: str
) -> None:
    customer = marker("customer")
    args = {"customer": customer}
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base, WORKER_TOKEN) as w:
        with anyio.fail_after(20):
            first = await client.call_tool("lookup_later", args)
            meta = pending_meta(first)
            posted = await _post(w, meta["id"], value="Ada Lovelace, gold")
            again = await client.call_tool("lookup_later", args)
            third = await client.call_tool("lookup_later", args)

    assert first.is_error
    assert meta["kind"] == "external"
    assert meta["state"] == "pending"
    assert "an external worker" in text_of(first)
    assert posted.status_code == 200, posted.text
    assert not again.is_error, again
    assert text_of(again) == "Ada Lovelace, gold"
    assert pending_meta(third)["state"] == "pending"  # delivered once; this is a new call
    assert pending_meta(third)["id"] != meta["id"]


@both_eras
async def test_an_upstream_tool_deferred_by_policy_is_answered_by_the_worker_only(
    rig: Rig, mode: str
) -> None:
    value = marker("deferred")
    async with agent_client(rig.mcp_url, mode) as client, api_client(rig.base, WORKER_TOKEN) as w:

        async def work() -> dict[str, Any]:
            call = await _pending_external(w, "value", value)
            response = await _post(w, call["id"], value=f"worker recorded {value}")
            assert response.status_code == 200, response.text
            return call

        with anyio.fail_after(20):
            result, call = await while_held(
                lambda: client.call_tool("recorder__record_deferred", {"value": value}), work
            )

    assert call["tool"] == "recorder__record_deferred"
    assert call["rule_id"] == "run-by-a-worker"
    assert not result.is_error
    assert text_of(result) == f"worker recorded {value}"
    assert rig.executions(value) == []


async def test_an_external_call_takes_one_result_and_no_approval_decision(rig: Rig) -> None:
    customer = marker("customer")
    async with (
        agent_client(rig.mcp_url, "auto") as client,
        api_client(rig.base, WORKER_TOKEN) as w,
        api_client(rig.base) as approver,
    ):
        with anyio.fail_after(20):
            first = await client.call_tool("lookup_later", {"customer": customer})
        id = pending_meta(first)["id"]
        as_approval = await decide(approver, id, "approve")
        listed = await wait_for_call(approver, customer, key="customer", path="/api/calls")
        one = await _post(w, id, value="first")
        two = await _post(w, id, value="second")
        by_approver = await _post(approver, id, value="third")

    assert as_approval.status_code == 422, as_approval.text
    assert listed["id"] == id
    assert one.status_code == 200, one.text
    assert two.status_code == 409, two.text
    assert by_approver.status_code == 409, by_approver.text
