"""Separation of duties: nobody approves their own call unless the rule lists ``caller``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support import write_config

from gateway.approvals.access import may_see
from gateway.approvals.errors import NotAnApprover
from gateway.gateway import Gateway
from toolsets import CallContext, Principal
from toolsets.functions.toolset import FunctionTool, FunctionToolset

BOB = Principal(id="user:bob", roles=frozenset({"ops"}))
ALICE = Principal(id="user:alice", roles=frozenset({"ops"}))
POLICY = """\
version: 1
rules:
  - id: ops-decide
    tools: [local__act]
    effect: ask
    approval: {approvers: ["role:ops"], hold: 0s}
  - id: ops-or-caller
    tools: [local__act_mine]
    effect: ask
    approval: {approvers: [caller, "role:ops"], hold: 0s}
"""


def act() -> str:
    """Needs an approval."""
    return "acted"


def act_mine() -> str:
    """Its caller may approve it too."""
    return "acted"


@pytest.fixture
async def gateway(tmp_path: Path) -> Gateway:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    config = write_config(
        tmp_path,
        [],
        policies={"files": [str(tmp_path / "policy.yaml")]},
        approvals={"store": "memory"},
    )
    functions = [
        FunctionTool(act, name="local__act"),
        FunctionTool(act_mine, name="local__act_mine"),
    ]
    tools = FunctionToolset(functions, server="local")
    return Gateway.from_config(config, toolsets=[tools])


async def _held(gateway: Gateway, tool: str) -> str:
    await gateway.call_tool(tool, {}, CallContext(principal=BOB))
    (call,) = await gateway.store.list(tool=tool)
    return call.id


async def test_an_approver_cannot_approve_its_own_call(gateway: Gateway) -> None:
    async with gateway:
        held = await _held(gateway, "local__act")
        call = await gateway.store.get(held)
        assert call is not None
        assert not may_see(call, BOB)
        assert may_see(call, ALICE)
        with pytest.raises(NotAnApprover):
            await gateway.approvals.decide(held, "approve", by=BOB, channel="api")
        decided = await gateway.approvals.decide(held, "approve", by=ALICE, channel="api")
    assert decided.decided_by == "user:alice"


async def test_a_rule_naming_caller_lets_the_caller_decide(gateway: Gateway) -> None:
    async with gateway:
        held = await _held(gateway, "local__act_mine")
        with anyio.fail_after(30):
            decided = await gateway.approvals.decide(
                held, "approve", by=BOB, channel="api", as_caller=True
            )
    assert decided.state == "approved"
