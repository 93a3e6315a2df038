"""No call runs unless its decision is on record: with the audit log's disk full, a decision
fails (the approver is told why, the call stays pending, nothing runs), a new risky call is
refused naming the cause, and once space returns the call is decided and runs exactly once."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support import full, write_config

from gateway.gateway import Gateway
from toolsets import Principal
from toolsets.errors import AuditUnavailable
from toolsets.functions.toolset import FunctionTool, FunctionToolset

APPROVER = Principal(id="user:alice", roles=frozenset({"approver"}))
POLICY = """\
version: 1
rules:
  - id: hold-act
    tools: ["local__act"]
    effect: ask
    approval: {approvers: ["role:approver"], hold: 30s}
"""
RUNS: list[str] = []


def act(what: str) -> str:
    """Do something that needs an approval."""
    RUNS.append(what)
    return f"did {what}"


async def test_a_decision_that_cannot_be_recorded_fails_and_nothing_runs(
    tmp_path: Path, small_disk: Path
) -> None:
    RUNS.clear()
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    config = write_config(
        tmp_path,
        [],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
        events={"audit": {"enabled": True, "path": str(small_disk / "audit.db")}},
    )
    local = FunctionToolset([FunctionTool(act, name="local__act")], server="local")
    outcome: list[str] = []

    async def call(gw: Gateway) -> None:
        result = await gw.call_tool("local__act", {"what": "deploy"})
        outcome.append(result.wire["content"][0]["text"])

    with anyio.fail_after(30):
        async with (
            Gateway.from_config(config, toolsets=[local]) as gw,
            gw.events.subscribe(["tool.approval.requested"]) as requested,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(call, gw)
            approval_id = (await anext(requested)).data["approval_id"]
            with full(small_disk):
                with pytest.raises(AuditUnavailable, match=str(small_disk / "audit.db")):
                    await gw.approvals.decide(approval_id, "approve", by=APPROVER, channel="api")
                still = await gw.store.get(approval_id)
                with pytest.raises(AuditUnavailable, match="cannot be written"):
                    await gw.call_tool("local__act", {"what": "another"})
                assert RUNS == []
            waiting = await gw.store.list(state="pending")
            await gw.approvals.decide(approval_id, "approve", by=APPROVER, channel="api")
    assert still is not None
    assert still.state == "pending"
    assert [call.id for call in waiting] == [approval_id]  # the refused call does not wait
    assert RUNS == ["deploy"]
    assert outcome == ["did deploy"]
