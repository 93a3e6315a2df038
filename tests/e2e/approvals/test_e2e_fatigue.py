"""Approval fatigue: one principal cannot flood approvers with held calls."""

from __future__ import annotations

from pathlib import Path

from support import echo_upstream, write_config

from gateway import Gateway
from toolsets import CallContext, Principal

POLICY = """
version: 1
defaults: {effect: allow}
rules:
  - id: echo-asks
    tools: [e__echo]
    effect: ask
    approval: {hold: 0s}
"""


def _ctx(who: str) -> CallContext:
    return CallContext(principal=Principal(id=who))


async def test_a_principal_with_too_many_waiting_calls_is_refused_until_some_are_decided(
    tmp_path: Path,
) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    config = write_config(
        tmp_path,
        [echo_upstream("e")],
        policies={"files": ["policy.yaml"]},
        approvals={"store": "memory", "max_pending_per_principal": 2},
    )
    async with Gateway.from_config(config) as gateway:
        first = await gateway.call_tool("e__echo", {"text": "1"}, _ctx("agent:busy"))
        await gateway.call_tool("e__echo", {"text": "2"}, _ctx("agent:busy"))
        again = await gateway.call_tool("e__echo", {"text": "1"}, _ctx("agent:busy"))
        refused = await gateway.call_tool("e__echo", {"text": "3"}, _ctx("agent:busy"))
        other = await gateway.call_tool("e__echo", {"text": "3"}, _ctx("agent:calm"))
        pending_id = first.meta["lockgate/pending"]["id"] if first.meta else ""
        await gateway.approvals.decide(
            pending_id, "deny", by=Principal(id="user:alice"), channel="api"
        )
        after = await gateway.call_tool("e__echo", {"text": "3"}, _ctx("agent:busy"))

    assert "waiting for an approver" in again.first_text()  # a re-issue is not a new call
    assert refused.is_error
    assert "2 of your calls are already waiting" in refused.first_text()
    assert refused.meta is not None
    assert "lockgate/pending" not in refused.meta
    assert other.meta is not None
    assert "lockgate/pending" in other.meta
    assert after.meta is not None
    assert "lockgate/pending" in after.meta
