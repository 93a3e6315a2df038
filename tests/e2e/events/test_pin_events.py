"""Changed tool definitions on ``/api/events``: approvers who may accept them see
``tool.pin_*`` events; other approvers do not."""

from __future__ import annotations

from pathlib import Path

import anyio
from events_e2e_support import watching
from support import echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import Principal

SECURITY = Principal(id="user:sec", roles=frozenset({"security"}))


async def test_pin_events_reach_the_approvers_who_may_accept_them(tmp_path: Path) -> None:
    auth = {
        "approvers": [
            {"id": "user:sec", "token": "sec-token", "roles": ["security"]},
            {"id": "user:ops", "token": "ops-token", "roles": ["ops"]},
        ]
    }
    config = write_config(
        tmp_path,
        [echo_upstream()],
        approvals={"store": "memory"},
        pins={"approvers": ["role:security"]},
        auth=auth,
    )
    async with (
        Gateway.from_config(config) as gateway,
        serve_asgi(build_app(gateway, manage_gateway=False)) as base,
        watching(base, "sec-token") as security,
        watching(base, "ops-token") as ops,
    ):
        await gateway.call_tool("echo__rug_pull", {"part": "description"})
        await gateway.call_tool("echo__echo", {"text": "after"})
        with anyio.fail_after(60):
            await security.until(lambda seen: len(seen) >= 1)
        changed = await gateway.pins.get("echo__weather")
        await gateway.accept_pin("echo__weather", pin=str(changed.changed_pin), by=SECURITY)
        with anyio.fail_after(60):
            await security.until(lambda seen: len(seen) >= 2)
    assert [e["type"] for e in security] == ["tool.pin_changed", "tool.pin_accepted"]
    assert security[0]["data"]["name"] == "echo__weather"
    assert ops == []
