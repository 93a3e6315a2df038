"""``/metrics``: the text exposition after some activity, parsed with prometheus_client's parser."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import httpx2
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp
from support import call

from gateway.events import BusObserver, EventBus, SimpleDecision
from gateway.events.tool_events import (
    approval_requested,
    approval_resolved,
    tool_denied,
    upstream_status,
)
from gateway.metrics import Metrics, metrics_endpoint
from toolsets import CallContext, ExternalToolset, ToolDef, ToolResult
from toolsets.events import EventsToolset

Server = Callable[[ASGIApp], AbstractAsyncContextManager[str]]
READ = ToolDef(name="files__read", server="files", upstream_name="read")
WRITE = ToolDef(name="files__write", server="files", upstream_name="write")


async def run(tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
    return ToolResult.error("no such file") if args.get("missing") else ToolResult.text("ok")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_exposition_has_call_approval_event_and_upstream_series(http_server: Server) -> None:
    bus, metrics = EventBus("gw"), Metrics()
    metrics.track(bus)
    toolset = EventsToolset(ExternalToolset([READ, WRITE], run), BusObserver(bus))
    ask = SimpleDecision("ask", "protect-secrets")
    async with bus.subscribe(buffer=1, name="slow"):
        await call(toolset, "files__read", {}, CallContext())
        await call(toolset, "files__read", {"missing": True}, CallContext())
        bus.publish(tool_denied(WRITE, CallContext(), {}, SimpleDecision("deny", "no"), "no"))
        bus.publish(approval_requested(WRITE, CallContext(), {}, ask, approval_id="a1"))
        bus.publish(approval_requested(WRITE, CallContext(), {}, ask, approval_id="a2"))
        bus.publish(
            approval_resolved(
                WRITE,
                CallContext(),
                approval_id="a1",
                decision="deny",
                decided_by="u",
                channel="api",
            )
        )
        bus.publish(upstream_status("files", "up"))
        bus.publish(upstream_status("web", "down"))
    app = Starlette(routes=[Route("/metrics", metrics_endpoint(metrics))])
    with anyio.fail_after(30):
        async with http_server(app) as base, httpx2.AsyncClient() as client:
            response = await client.get(f"{base}/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    got = samples(response.text)
    calls = "lockgate_tool_calls_total"
    assert got[(calls, (("effect", "allow"), ("outcome", "ok"), ("tool", "files__read")))] == 1
    assert got[(calls, (("effect", "allow"), ("outcome", "error"), ("tool", "files__read")))] == 1
    assert got[(calls, (("effect", "deny"), ("outcome", "denied"), ("tool", "files__write")))] == 1
    assert got[(calls, (("effect", "ask"), ("outcome", "deny"), ("tool", "files__write")))] == 1
    duration = "lockgate_tool_call_duration_seconds_count"
    assert got[(duration, (("tool", "files__read"),))] == 2
    assert got[("lockgate_pending_approvals", ())] == 1
    assert got[("lockgate_upstream_up", (("server", "files"),))] == 1
    assert got[("lockgate_upstream_up", (("server", "web"),))] == 0
    published = "lockgate_events_published_total"
    assert got[(published, (("type", "tool.call"),))] == 2
    assert got[(published, (("type", "tool.result"),))] == 2
    assert (
        got[("lockgate_events_dropped_total", (("subscriber", "slow"),))] == 10 - 1
    )  # 10 events, 1 slot
    assert got[("lockgate_event_subscribers", ())] == 0


def test_each_gateway_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.webhook_failed("a.example")
    assert (
        first.registry.get_sample_value(
            "lockgate_webhook_failures_total", {"url_host": "a.example"}
        )
        == 1
    )
    assert (
        second.registry.get_sample_value(
            "lockgate_webhook_failures_total", {"url_host": "a.example"}
        )
        is None
    )


def test_untracking_a_bus_stops_observing_it() -> None:
    bus, metrics = EventBus("gw"), Metrics()
    untrack = metrics.track(bus)
    untrack()
    bus.publish(upstream_status("files", "up"))
    assert metrics.registry.get_sample_value("lockgate_upstream_up", {"server": "files"}) is None
    assert "lockgate_events_published" not in metrics.render().decode()
