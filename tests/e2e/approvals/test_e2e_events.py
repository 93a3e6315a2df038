"""Approval events on the gateway's bus: ``tool.approval.requested`` when a call is held,
``tool.approval.resolved`` (decision, decided_by, channel) when it is decided, then ``tool.call``
and ``tool.result`` only if it runs.

Each test subscribes to ``gw.events`` of the served gateway, drives real clients, then closes
the subscription and reads what was buffered (`Subscription.close` ends the iteration after the
buffered events), so nothing is waited on by time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from approvals_e2e_support import (
    AGENT,
    ALICE,
    WORKER_TOKEN,
    Rig,
    agent_client,
    answering,
    api_client,
    decide,
    e2e_config,
    executions,
    marker,
    pending_meta,
    wait_for_call,
    while_held,
)
from support import MODES

from gateway.events.bus import Subscription
from gateway.events.model import Event
from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal

both_eras = pytest.mark.parametrize("mode", MODES)
HELD = "recorder__record"


class Recorded:
    """The events of one subscription: read on demand (`until`), the rest when the block ends."""

    def __init__(self, subscription: Subscription) -> None:
        self.events: list[Event] = []
        self._subscription = subscription

    async def until(self, wanted: Callable[[Event], bool]) -> Event:
        """Read events until one is ``wanted``; it is returned (and kept with the others)."""
        async for event in self._subscription:
            self.events.append(event)
            if wanted(event):
                return event
        raise AssertionError("the subscription ended")

    async def drain(self) -> None:
        self._subscription.close()
        self.events.extend([event async for event in self._subscription])

    def of(self, approval_id: str, call_id: str) -> list[tuple[str, dict[str, Any]]]:
        """``(type, data)`` of the events about one held call, in publish order."""
        return [
            (e.type, dict(e.data))
            for e in self.events
            if e.data.get("approval_id") == approval_id
            or e.data.get("pending_id") == approval_id
            or e.data.get("call_id") == call_id
        ]

    def types(self, approval_id: str, call_id: str) -> list[str]:
        return [t for t, _ in self.of(approval_id, call_id)]


def resolution_of(id: str) -> Callable[[Event], bool]:
    """Matches the ``tool.approval.resolved`` event of approval ``id``."""
    return lambda e: e.type == "tool.approval.resolved" and e.data.get("approval_id") == id


@contextlib.asynccontextmanager
async def recording(gateway: Gateway) -> AsyncIterator[Recorded]:
    async with gateway.events.subscribe(["tool.*"], name="approvals-e2e") as sub:
        recorded = Recorded(sub)
        yield recorded
        await recorded.drain()


@both_eras
async def test_an_approved_call_is_announced_requested_resolved_called_and_answered(
    rig: Rig, mode: str
) -> None:
    value = marker("events-approve")
    args = {"value": value, "tags": ["a", "b"]}
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base) as api,
        recording(rig.gateway) as seen,
    ):

        async def approve() -> dict[str, Any]:
            held = await wait_for_call(api, value)
            assert (await decide(api, held["id"], "approve")).status_code == 200
            return held

        with anyio.fail_after(20):
            result, held = await while_held(lambda: client.call_tool(HELD, args), approve)
            await seen.until(resolution_of(held["id"]))

    assert not result.is_error
    events = seen.of(held["id"], held["call_id"])
    # Requested first, the result last. Whether resolved precedes tool.call is a race (see
    # the suite's report), so their relative order is not asserted here.
    assert events[0][0] == "tool.approval.requested"
    assert events[-1][0] == "tool.result"
    by_type = dict(events)
    assert len(by_type) == len(events) == 4
    requested = by_type["tool.approval.requested"]
    assert requested["approval_id"] == held["id"]
    assert requested["tool"] == HELD
    assert requested["args"] == args
    assert requested["principal"] == AGENT
    assert requested["reason"] == "recording needs a security approver"
    assert requested["decision"] == {"effect": "ask", "rule_id": "held-for-security"}
    assert requested["expires_at"]
    resolved = by_type["tool.approval.resolved"]
    assert resolved["decision"] == "approve"
    assert resolved["decided_by"] == ALICE
    assert resolved["channel"] == "api"
    assert resolved["principal"] == AGENT
    assert by_type["tool.call"]["args"] == args
    assert by_type["tool.result"]["is_error"] is False


@both_eras
async def test_a_denied_call_is_resolved_with_the_message_and_never_called(
    rig: Rig, mode: str
) -> None:
    value = marker("events-deny")
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base) as api,
        recording(rig.gateway) as seen,
    ):

        async def deny() -> dict[str, Any]:
            held = await wait_for_call(api, value)
            response = await decide(api, held["id"], "deny", message="not on a Friday")
            assert response.status_code == 200
            return held

        with anyio.fail_after(20):
            result, held = await while_held(lambda: client.call_tool(HELD, {"value": value}), deny)
            await seen.until(resolution_of(held["id"]))

    assert result.is_error
    events = seen.of(held["id"], held["call_id"])
    assert [t for t, _ in events] == ["tool.approval.requested", "tool.approval.resolved"]
    resolved = events[1][1]
    assert resolved["decision"] == "deny"
    assert resolved["message"] == "not on a Friday"
    assert resolved["decided_by"] == ALICE


@both_eras
async def test_a_callers_decision_is_resolved_on_its_own_channel(rig: Rig, mode: str) -> None:
    value = marker("events-caller")
    callback = answering("accept", {"decision": "approve"})
    async with (
        agent_client(rig.mcp_url, mode, elicitation_callback=callback) as client,
        api_client(rig.base) as api,
        recording(rig.gateway) as seen,
    ):
        with anyio.fail_after(20):
            result = await client.call_tool("recorder__record_caller", {"value": value})
        held = await wait_for_call(api, value, state="done")
        with anyio.fail_after(30):
            await seen.until(resolution_of(held["id"]))

    assert not result.is_error
    assert seen.types(held["id"], held["call_id"])[:2] == [
        "tool.approval.requested",
        "tool.approval.resolved",
    ]
    calls = [e for e in seen.events if e.type == "tool.call" and e.data["args"]["value"] == value]
    assert len(calls) == 1
    resolved = seen.of(held["id"], held["call_id"])[1][1]
    assert resolved["decision"] == "approve"
    assert resolved["decided_by"] == AGENT
    assert resolved["channel"] == ("elicitation" if mode == "legacy" else "input_required")


@both_eras
async def test_a_cancelled_call_is_resolved_as_cancelled_by_the_client(rig: Rig, mode: str) -> None:
    value = marker("events-cancel")
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base) as api,
        recording(rig.gateway) as seen,
    ):
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, HELD, {"value": value})
                held = await wait_for_call(api, value)
                tg.cancel_scope.cancel()
            await seen.until(resolution_of(held["id"]))

    events = seen.of(held["id"], held["call_id"])
    assert [t for t, _ in events] == ["tool.approval.requested", "tool.approval.resolved"]
    assert events[1][1]["decision"] == "cancel"
    assert events[1][1]["channel"] == "client"


@both_eras
async def test_the_run_of_a_reissued_approved_call_is_tied_to_its_approval(
    rig: Rig, mode: str
) -> None:
    value = marker("events-reissue")
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base) as api,
        recording(rig.gateway) as seen,
    ):
        with anyio.fail_after(20):
            first = await client.call_tool("recorder__record_brief", {"value": value})
            id = pending_meta(first)["id"]
            assert (await decide(api, id, "approve")).status_code == 200
            await seen.until(resolution_of(id))
            ran = await client.call_tool("recorder__record_brief", {"value": value})
        held = (await api.get(f"/api/approvals/{id}")).json()

    assert not ran.is_error
    assert seen.types(id, held["call_id"]) == [
        "tool.approval.requested",
        "tool.approval.resolved",
        "tool.call",
        "tool.result",
    ]


@both_eras
async def test_an_expired_call_is_resolved_as_expired(rig: Rig, mode: str) -> None:
    value = marker("events-expire")
    async with agent_client(rig.mcp_url, mode) as client, recording(rig.gateway) as seen:
        with anyio.fail_after(20):
            result = await client.call_tool("recorder__record_expiring", {"value": value})
    id = pending_meta(result)["id"]
    requested = [e for e in seen.events if e.data.get("approval_id") == id]

    assert pending_meta(result)["state"] == "expired"
    assert [e.type for e in requested] == ["tool.approval.requested", "tool.approval.resolved"]
    assert requested[1].data["decision"] == "expire"  # as the record (and the sweeper) say


@both_eras
async def test_bad_arguments_announce_no_approval(rig: Rig, mode: str) -> None:
    value = marker("events-bad")
    async with agent_client(rig.mcp_url, mode) as client, recording(rig.gateway) as seen:
        with anyio.fail_after(20):
            result = await client.call_tool(HELD, {"value": value, "count": "many"})

    assert result.is_error
    assert [e for e in seen.events if (e.data.get("args") or {}).get("value") == value] == []


@both_eras
async def test_a_deferred_call_is_announced_and_resolved_by_the_worker(rig: Rig, mode: str) -> None:
    customer = marker("events-customer")
    async with (
        agent_client(rig.mcp_url, mode) as client,
        api_client(rig.base, WORKER_TOKEN) as worker,
        recording(rig.gateway) as seen,
    ):
        with anyio.fail_after(20):
            first = await client.call_tool("lookup_later", {"customer": customer})
        id = pending_meta(first)["id"]
        posted = await worker.post(f"/api/calls/{id}/result", json={"value": "found"})
        with anyio.fail_after(30):
            await seen.until(resolution_of(id))

    assert posted.status_code == 200
    events = [e for e in seen.events if id in (e.data.get("approval_id"), e.data.get("pending_id"))]
    assert [e.type for e in events] == ["tool.deferred", "tool.approval.resolved"]
    assert events[0].data["args"] == {"customer": customer}
    assert events[1].data["decided_by"] == "svc:worker"
    assert events[1].data["channel"] == "worker"


async def test_an_in_process_host_approves_through_the_approval_service(tmp_path: Path) -> None:
    """`Gateway.from_config` in-process: the host learns of the held call from the bus."""
    log = tmp_path / "executions.jsonl"
    value = marker("in-process")
    ctx = CallContext(principal=Principal(id="agent:in-process"))
    approver = Principal(id=ALICE, roles=frozenset({"security"}))
    async with Gateway.from_config(e2e_config(tmp_path, log=log)) as gw:
        async with gw.events.subscribe(["tool.approval.*"]) as sub:

            async def approve_when_requested() -> str:
                async for event in sub:
                    if event.type == "tool.approval.requested":
                        id = str(event.data["approval_id"])
                        await gw.approvals.decide(id, "approve", by=approver, channel="python")
                        return id
                raise AssertionError("the subscription ended")

            with anyio.fail_after(20):
                result, id = await while_held(
                    lambda: gw.call_tool(HELD, {"value": value}, ctx),
                    approve_when_requested,
                )
                resolved = await anext(aiter(sub))
        record = await gw.store.get(id)

    assert not result.is_error
    assert executions(log, value) == [{"value": value}]
    assert resolved.type == "tool.approval.resolved"
    assert resolved.data["channel"] == "python"
    assert record is not None
    assert record.state == "done"
    assert record.principal == "agent:in-process"
