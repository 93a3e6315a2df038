"""Who sees which events on ``/api/events``: a subscriber sees what its credential's filter
lets through; an approver sees the held calls it may decide, and nothing of anyone else's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from events_e2e_support import local_config, watching
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets import Principal
from toolsets.context import CallContext

POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: ops-holds
    tools: [local__held]
    effect: ask
    approval: {approvers: ["role:ops"], hold: 0s}
  - id: finance-pays
    tools: [local__pay]
    effect: ask
    approval: {approvers: ["role:finance"], hold: 0s}
"""
SUBSCRIBER_A = "sub-a-token"
OPS = "ops-token"
OTHER = "other-token"


def config(tmp_path: Path) -> Path:
    auth = {
        "subscribers": [
            {
                "id": "dash:a",
                "token": SUBSCRIBER_A,
                "events": {"principals": ["agent:a"], "types": ["tool.*"]},
            }
        ],
        "approvers": [
            {"id": "user:ops", "token": OPS, "roles": ["ops"]},
            {"id": "user:other", "token": OTHER, "roles": ["finance"]},
        ],
    }
    return local_config(tmp_path, POLICY, auth)


async def test_subscribers_and_approvers_see_only_their_events(tmp_path: Path) -> None:
    async with (
        Gateway.from_config(config(tmp_path)) as gateway,
        serve_asgi(build_app(gateway, manage_gateway=False)) as base,
        watching(base, SUBSCRIBER_A) as dashboard,
        watching(base, OPS) as ops,
        watching(base, OTHER) as other,
    ):
        for who in ("agent:a", "agent:b"):
            await gateway.call_tool("local__free", {"note": who}, _ctx(who))
            await gateway.call_tool("local__held", {"note": who}, _ctx(who))
        # Last, a call only finance decides: once each stream shows it (or, for ops, its
        # two), every earlier event has passed through each stream's scope.
        await gateway.call_tool("local__pay", {"note": "last"}, _ctx("agent:a"))
        with anyio.fail_after(30):
            for stream in (dashboard, other):
                await stream.until(lambda seen: any(_tool(e) == "local__pay" for e in seen))
            await ops.until(lambda seen: len(seen) >= 2)
    # The dashboard's filter: agent:a's tool events only.
    assert {e["data"]["principal"] for e in dashboard} == {"agent:a"}
    assert {e["type"] for e in dashboard} >= {"tool.call", "tool.result", "tool.approval.requested"}
    # ops may decide both held calls: their approval events, and nothing else.
    assert {e["type"] for e in ops} == {"tool.approval.requested"}
    assert sorted(e["data"]["principal"] for e in ops) == ["agent:a", "agent:b"]
    # An approver of another rule sees only the call it may decide.
    assert [(e["type"], e["data"]["tool"]) for e in other] == [
        ("tool.approval.requested", "local__pay")
    ]
    assert all(e["data"]["tool"] == "local__held" for e in ops)


def _tool(event: dict[str, Any]) -> object:
    return event["data"].get("tool")


def _ctx(principal: str) -> CallContext:
    return CallContext(principal=Principal(id=principal))
