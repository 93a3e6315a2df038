"""Prometheus metrics of one gateway, served at ``/metrics`` in the text exposition format.

Each `Metrics` has its own `CollectorRegistry` (never the process-global one), so several
gateways in one process (tests) do not clash. Call metrics are derived from bus events by
`Metrics.track`; event counters are read from the bus at scrape time, costing publish nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from gateway.approvals.decision_metrics import DecisionMetrics
from gateway.events.bus import EventBus
from gateway.events.model import Event

__all__ = ["LATENCY_BUCKETS", "Metrics", "metrics_endpoint"]

LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
"""Seconds; tool calls range from in-process (ms) to long upstream jobs (minutes)."""

_NOT_EXECUTED: Final = frozenset({"deny", "respond", "expired", "cancelled"})


class Metrics:
    """The gateway's metrics.

    Attributes:
        registry: Where every metric here is registered.
        tool_calls: ``lockgate_tool_calls_total{tool,effect,outcome}``; outcome is ``ok``,
            ``error``, ``denied``, ``rate_limited``, ``deferred`` or an approver's
            non-executing answer.
        call_duration: ``lockgate_tool_call_duration_seconds{tool}`` of executed calls.
        pending_approvals: ``lockgate_pending_approvals``.
        webhook_failures: ``lockgate_webhook_failures_total{url_host}``: events given up.
        webhook_retries: ``lockgate_webhook_retries_total{url_host}``: failed attempts retried.
        upstream_up: ``lockgate_upstream_up{server}``: 1 up, 0 down or reconnecting.
        mcp_requests: ``lockgate_mcp_requests_total{transport,path}``: MCP requests (HTTP
            ``/mcp`` or stdio lines) by the path that answered them (``fast`` or ``sdk``).
        rate_limited: ``lockgate_rate_limited_calls_total{rule,mode}``: calls a rule's rate
            limit refused (``mode="enforce"``), or would have (``mode="shadow"``: they ran).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.tool_calls = Counter(
            "lockgate_tool_calls", "Tool calls", ["tool", "effect", "outcome"], registry=r
        )
        self.call_duration = Histogram(
            "lockgate_tool_call_duration_seconds",
            "Duration of executed tool calls",
            ["tool"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.pending_approvals = Gauge(
            "lockgate_pending_approvals", "Calls waiting for approval", registry=r
        )
        self.webhook_failures = Counter(
            "lockgate_webhook_failures", "Webhook events given up", ["url_host"], registry=r
        )
        self.webhook_retries = Counter(
            "lockgate_webhook_retries", "Webhook attempts retried", ["url_host"], registry=r
        )
        self.upstream_up = Gauge("lockgate_upstream_up", "Upstream is up", ["server"], registry=r)
        self.mcp_requests = Counter(
            "lockgate_mcp_requests",
            "MCP requests by transport and the path that answered them: fast (a tools/call "
            "answered straight from the chain) or sdk (the MCP SDK's transport)",
            ["transport", "path"],
            registry=r,
        )
        self.rate_limited = Counter(
            "lockgate_rate_limited_calls",
            "Calls over a rule's rate limit: refused (mode enforce) or recorded only (shadow)",
            ["rule", "mode"],
            registry=r,
        )
        self.decisions = DecisionMetrics(r)  # fed by the approval service's outcomes

    def track(self, bus: EventBus) -> Callable[[], None]:
        """Derive metrics from ``bus`` events and export its counters; returns an undo function."""
        collector = _BusCollector(bus)
        self.registry.register(collector)
        remove_listener = bus.add_listener(self.observe)

        def untrack() -> None:
            remove_listener()
            self.registry.unregister(collector)

        return untrack

    def observe(self, event: Event) -> None:
        """Update the call, approval and upstream metrics from one event."""
        data, kind = event.data, event.type
        if kind == "tool.result":
            effect = _effect(data.get("decision"))
            outcome = "error" if data.get("is_error") else "ok"
            self.tool_calls.labels(data["tool"], effect, outcome).inc()
            self.call_duration.labels(data["tool"]).observe(data["duration_ms"] / 1000)
        elif kind == "tool.call":
            self._shadow_limited(data.get("decision"))
        elif kind == "tool.denied":
            self.tool_calls.labels(data["tool"], "deny", "denied").inc()
        elif kind == "tool.rate_limited":
            effect = _effect(data.get("decision"))
            self.tool_calls.labels(data["tool"], effect, "rate_limited").inc()
            self.rate_limited.labels(data["limit"]["rule_id"], "enforce").inc()
        elif kind == "tool.deferred":
            self.tool_calls.labels(data["tool"], "defer", "deferred").inc()
        elif kind == "tool.approval.requested":
            self.pending_approvals.inc()
        elif kind == "tool.approval.resolved":
            self.pending_approvals.dec()
            if data.get("decision") in _NOT_EXECUTED:
                self.tool_calls.labels(data["tool"], "ask", data["decision"]).inc()
        elif kind == "upstream.status":
            self.upstream_up.labels(data["server"]).set(1 if data["status"] == "up" else 0)

    def _shadow_limited(self, decision: Any) -> None:
        """Count the shadow limits that would have refused a call that ran."""
        shadow = decision.get("shadow") if isinstance(decision, Mapping) else None
        for match in shadow or ():
            if "rate_limited" in match:
                self.rate_limited.labels(match["rule_id"], "shadow").inc()

    def set_pending_approvals(self, count: int) -> None:
        """Resynchronise the pending gauge with the store (at start-up, after a restart)."""
        self.pending_approvals.set(count)

    def webhook_failed(self, host: str) -> None:
        """Count an event a webhook gave up on."""
        self.webhook_failures.labels(host).inc()

    def webhook_retried(self, host: str) -> None:
        """Count a failed webhook attempt that will be retried."""
        self.webhook_retries.labels(host).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


def _effect(decision: Any) -> str:
    return str(decision.get("effect", "allow")) if isinstance(decision, Mapping) else "allow"


class _BusCollector(Collector):
    """Reads the bus counters at scrape time."""

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus

    def collect(self) -> Iterable[Metric]:
        stats = self.bus.stats()
        published = CounterMetricFamily(
            "lockgate_events_published", "Events published", labels=["type"]
        )
        for event_type, count in sorted(stats.published.items()):
            published.add_metric([event_type], count)
        dropped = CounterMetricFamily(
            "lockgate_events_dropped", "Events dropped for slow subscribers", labels=["subscriber"]
        )
        for name, count in sorted(stats.dropped.items()):
            dropped.add_metric([name], count)
        subscribers = GaugeMetricFamily(
            "lockgate_event_subscribers", "Open event subscriptions", value=stats.subscribers
        )
        return [published, dropped, subscribers]


def metrics_endpoint(metrics: Metrics) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint serving ``metrics`` (mount it at ``/metrics``)."""

    async def endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return endpoint
