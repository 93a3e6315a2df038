"""Refusals (and a failure) that need a gateway of their own, through the MCP Python SDK client
over HTTP in both eras: a quarantined tool, too many calls waiting for approval, and an
upstream call that times out (``lockgate/error``, not a refusal)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from refusal_support import connect, refusal_config, serve
from support import MODES

from toolsets.context import Principal

both_eras = pytest.mark.parametrize("mode", MODES)


def refusal_of(result: Any) -> dict[str, Any]:
    assert result.is_error
    found: dict[str, Any] = result.meta["lockgate/refusal"]
    assert [block.text for block in result.content] == [found["message"]]
    assert "lockgate/error" not in result.meta
    return found


@both_eras
async def test_a_quarantined_tool_is_a_quarantined_refusal_an_approver_can_lift(
    tmp_path: Path, mode: str
) -> None:
    approvals = {"store": "sqlite", "path": str(tmp_path / "pending.db")}
    config = refusal_config(tmp_path, approvals=approvals)
    async with serve(config) as served, connect(served, mode) as client:
        async with served.gateway.events.subscribe(["tool.pin_changed"]) as changes:
            await client.call_tool("echo__rug_pull", {"part": "description"})
            with anyio.fail_after(60):
                await anext(aiter(changes))
        result = await client.call_tool("echo__weather", {"city": "Oslo"})

    found = refusal_of(result)
    assert "changed upstream (description)" in found["message"]
    assert (found["kind"], found["rule"], found["unblock"]) == (
        "quarantined",
        None,
        {"action": "ask_approver"},
    )


@both_eras
async def test_too_many_calls_waiting_is_a_refusal_saying_to_wait_for_them(
    tmp_path: Path, mode: str
) -> None:
    config = refusal_config(tmp_path, approvals={"max_pending_per_principal": 1})
    async with serve(config) as served, connect(served, mode) as client:
        with anyio.fail_after(30):
            waiting = await client.call_tool("recorder__record_lapse", {"value": "one"})
            refused = await client.call_tool("recorder__record_lapse", {"value": "two"})

    assert waiting.meta["lockgate/pending"]["state"] == "pending"
    found = refusal_of(refused)
    assert found["message"] == (
        "1 of your calls are already waiting for a decision; wait for those before making more "
        "calls that need approval."
    )
    assert (found["kind"], found["unblock"]) == ("too_many_pending", {"action": "wait_for_pending"})


@both_eras
async def test_an_upstream_timeout_is_an_error_not_a_refusal(tmp_path: Path, mode: str) -> None:
    config = refusal_config(tmp_path, echo={"timeout": 0.2})
    async with serve(config) as served, connect(served, mode) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("echo__slow", {"steps": 200})
            after = await client.call_tool("recorder__record_free", {"value": uuid.uuid4().hex})

    assert result.is_error
    assert result.content[0].text == "Tool 'slow' timed out after 0.2 s."  # its upstream name
    assert "lockgate/refusal" not in result.meta
    assert result.meta["lockgate/error"] == {
        "kind": "upstream_timeout",
        "retryable": True,
        "server": "echo",
    }
    assert not after.is_error


@both_eras
async def test_an_approved_call_whose_tool_changed_since_is_a_tool_changed_refusal(
    tmp_path: Path, mode: str
) -> None:
    approvals = {"store": "sqlite", "path": str(tmp_path / "pending.db")}
    config = refusal_config(tmp_path, approvals=approvals, pins={"on_change": "warn"})
    ops = Principal(id="user:ops", roles=frozenset({"ops"}))
    async with serve(config) as served, connect(served, mode) as client:
        with anyio.fail_after(60):
            held = await client.call_tool("echo__weather", {"city": "Oslo"})
            id = held.meta["lockgate/pending"]["id"]
            await served.gateway.approvals.decide(id, "approve", by=ops, channel="api")
            async with served.gateway.events.subscribe(["tool.pin_changed"]) as changes:
                await client.call_tool("echo__rug_pull", {"part": "description"})
                await anext(aiter(changes))
            result = await client.call_tool("echo__weather", {"city": "Oslo"})

    found = refusal_of(result)
    assert found["message"] == (
        "tool 'echo__weather' changed or disappeared after approval; not executed"
    )
    assert (found["kind"], found["rule"], found["approvalId"], found["unblock"]) == (
        "tool_changed",
        "weather-needs-ops",
        id,
        {"action": "reissue"},
    )
