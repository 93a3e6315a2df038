"""An in-process gateway for the grants, stages and break-glass tests: local function tools, a
policy of rules offering each, and the people who decide. Imported by module name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from support import write_config

from gateway.approvals.pending import PendingCall
from gateway.events.model import Event
from gateway.gateway import Gateway
from toolsets import CallContext, Principal, ToolResult
from toolsets.functions.toolset import FunctionTool, FunctionToolset

BOB = Principal(id="agent:bob")
"""The caller."""
SECURITY = [Principal(id=f"user:sec{i}", roles=frozenset({"security"})) for i in range(1, 21)]
"""Twenty people with role ``security``."""
CTO = Principal(id="user:cto")
ONCALL = Principal(id="user:pager", roles=frozenset({"oncall"}))

POLICY = """\
version: 1
defaults:
  approval: {hold: 0s, approvers: ["role:security"]}
rules:
  - id: two-stage
    tools: [local__purge]
    effect: ask
    reason: purges need two of security, then the CTO
    approval:
      stages: [{approvers: ["role:security"], min: 2}, {approvers: [user:cto]}]
      break_glass: role:oncall
  - id: own-vote
    tools: [local__purge_own]
    effect: ask
    approval: {stages: [{approvers: [caller, "role:security"], min: 2}], grants: [once, tool]}
  - id: crowd
    tools: [local__crowd]
    effect: ask
    approval: {stages: [{approvers: ["role:security"], min: 12}, {approvers: [user:cto]}]}
  - id: session-grants
    tools: [local__write]
    effect: ask
    approval: {grants: [once, session], grant_max: 1h}
  - id: tool-grants
    tools: [local__deploy]
    effect: ask
    approval: {grants: [once, tool], grant_max: 30m}
"""


def _tool(name: str) -> FunctionTool:
    def run(target: str = "") -> str:
        """Does the thing."""
        return f"{name} {target}".strip()

    return FunctionTool(run, name=f"local__{name}")


@asynccontextmanager
async def local_gateway(
    directory: Path, *, store: str = "memory", audit: bool = False
) -> AsyncIterator[Gateway]:
    """A running gateway with the tools of `POLICY` (``store``: memory or sqlite)."""
    (directory / "policy.yaml").write_text(POLICY, encoding="utf-8")
    sections: dict[str, Any] = {
        "policies": {"files": [str(directory / "policy.yaml")]},
        "approvals": {"store": store, "path": str(directory / "pending.db")},
        "events": {"audit": {"enabled": audit, "path": str(directory / "audit.db")}},
    }
    config = write_config(directory, [], **sections)
    names = ("purge", "purge_own", "crowd", "write", "deploy")
    tools = FunctionToolset([_tool(name) for name in names], server="local")
    async with Gateway.from_config(config, toolsets=[tools]) as gateway:
        yield gateway


def as_(who: Principal, session: str | None = "s-1") -> CallContext:
    """A call context of ``who`` in ``session``."""
    return CallContext(principal=who, session_id=session)


async def held(
    gateway: Gateway, tool: str, target: str, who: Principal = BOB, session: str | None = "s-1"
) -> PendingCall:
    """Call ``tool`` (answered "pending" at once: hold 0s) and return the held call."""
    result = await gateway.call_tool(tool, {"target": target}, as_(who, session))
    assert result.is_error, result
    pending = (result.meta or {})["lockgate/pending"]
    found = await gateway.store.get(pending["id"])
    assert found is not None
    return found


async def ran(gateway: Gateway, tool: str, target: str, ctx: CallContext) -> ToolResult:
    """Call ``tool``; it must run (not held, not refused)."""
    result = await gateway.call_tool(tool, {"target": target}, ctx)
    assert not result.is_error, result
    return result


def of_type(events: Sequence[Event], kind: str) -> list[dict[str, Any]]:
    """The data of every event of type ``kind``."""
    return [dict(event.data) for event in events if event.type == kind]
