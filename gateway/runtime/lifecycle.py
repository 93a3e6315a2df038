"""`GatewayRuntime`: what a running gateway starts and stops, and the tasks it runs meanwhile."""

from __future__ import annotations

import contextlib
import logging
from types import TracebackType
from typing import Self

import anyio

from gateway.background.resilient import keep_going
from gateway.config.model import GatewayConfig
from gateway.events import tool_events as event_types
from gateway.events.webhooks import WebhookSink
from gateway.pins.follow import PinFollower
from gateway.runtime.parts import Parts
from toolsets._sdk_compat import check_sdk
from toolsets.errors import LockgateError
from toolsets.upstream.server import UpstreamStatus

__all__ = ["SWEEP_INTERVAL", "GatewayRuntime"]

log = logging.getLogger("lockgate")
SWEEP_INTERVAL = 5.0
"""Seconds between sweeps that record overdue pending calls as expired."""


class GatewayRuntime:
    """Starts a gateway's parts in order (stores, events, sessions, the sandbox, the relay,
    the resources, then the upstreams, which connect in the background), runs its background
    tasks, and stops it all in reverse; an async context manager.

    Args:
        config: The gateway's config.
        parts: What the gateway is made of (`gateway.wiring.compose.compose`).
    """

    def __init__(self, config: GatewayConfig, parts: Parts) -> None:
        self._config = config
        self._parts = parts
        self._stack: contextlib.AsyncExitStack | None = None
        parts.signals.follow(status=self._status)

    @property
    def running(self) -> bool:
        """Whether the gateway is started (and not yet stopping)."""
        return self._stack is not None

    def closing(self) -> None:
        """Mark the gateway as shutting down: held calls interrupted now stay pending."""
        self._parts.approvals.closing.close()

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise LockgateError("Gateway is already running")
        check_sdk()  # the SDK's private names we rely on, or a clear error naming the fix
        parts = self._parts
        async with contextlib.AsyncExitStack() as stack:
            if parts.telemetry is not None:  # shut down last: flushes the spans of the closing
                await stack.enter_async_context(parts.telemetry)
                parts.telemetry.export_metrics(parts.metrics.registry)
            # The store first: with PostgreSQL it holds the pool the event sinks drain into.
            await stack.enter_async_context(parts.approvals.store)
            await self._start_events(stack)
            stack.push_async_callback(parts.approvals.grants.store.close)
            stack.push_async_callback(parts.pins.store.close)
            if parts.vault is not None:
                stack.push_async_callback(parts.vault.close)
            await stack.enter_async_context(parts.sessions)
            if parts.scripts is not None:  # sandbox workers start and stop with the gateway
                await stack.enter_async_context(parts.scripts.sandbox)
            await self._recover()
            await stack.enter_async_context(parts.relay)  # before upstreams, closed after them
            await stack.enter_async_context(parts.resources)  # renews subscriptions as they come
            # Upstreams connect in the background: the gateway serves at once (see `Readiness`).
            await stack.enter_async_context(parts.root)
            await stack.enter_async_context(parts.tasks)  # follows tasks; before upstreams stop
            parts.readiness.start()
            await self._start_tasks(stack)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            for upstream in self._parts.upstreams.values():  # every server's shutdown at once
                upstream.stop_soon()
            await stack.aclose()
        return None

    async def _recover(self) -> None:
        report = await self._parts.approvals.store.recover()
        if report.interrupted or report.expired:
            log.warning(
                "recovered pending calls: %d interrupted, %d expired, %d pending",
                len(report.interrupted),
                len(report.expired),
                report.pending,
            )

    async def _start_events(self, stack: contextlib.AsyncExitStack) -> None:
        events, metrics = self._parts.events, self._parts.metrics
        stack.callback(metrics.track(events.bus))
        stack.callback(self._parts.approvals.outcomes.watch(metrics.decisions.observe))
        if events.audit is not None and events.audit_sink is not None:
            await stack.enter_async_context(events.audit)
            await stack.enter_async_context(events.audit_sink)
        if events.cluster is not None:
            await stack.enter_async_context(events.cluster)
        if self._config.events.webhooks:
            webhooks = self._config.events.webhooks
            sink = WebhookSink(events.stream, webhooks, metrics=metrics, claim=events.claims)
            await stack.enter_async_context(sink)
        stack.callback(events.bus.close)
        if events.cluster is not None:  # ends the webhooks' and SSE streams on the feed too
            stack.callback(events.cluster.feed.close)

    async def _start_tasks(self, stack: contextlib.AsyncExitStack) -> None:
        sweeper = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(sweeper.cancel_scope.cancel)
        sweeper.start_soon(self._sweep_expired)
        sweeper.start_soon(self._follow_pins)
        if self._config.policies.watch and self._config.policies.files:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            tg.start_soon(self._parts.policy.watch)
            tg.start_soon(self._announce_reloads)

    async def _sweep_expired(self) -> None:
        # Expiry is its own outcome: announce it (and keep the pending gauge honest). A sweep
        # that fails (the store is away) is tried again: it never ends the gateway's tasks.
        sweep = self._parts.approvals.store.sweep_expired  # its listener announces each
        await keep_going(sweep, what="expiry sweep", every=SWEEP_INTERVAL)

    async def _follow_pins(self) -> None:
        # A pin changed by another process or replica (the store is shared) counts here too.
        parts = self._parts
        events = parts.events.stream if parts.events.cluster is not None else None
        changed = parts.catalogue.changed
        await PinFollower(parts.pins, parts.upstreams, changed=changed, events=events).run()

    async def _announce_reloads(self) -> None:
        await keep_going(self._announce_reload, what="policy reload announcement")

    async def _announce_reload(self) -> None:
        # A new policy can show or hide tools: clients re-list.
        if not await self._parts.policy.wait_reload():
            await self._parts.readiness.check_policy_names()
            await self._parts.catalogue.tell("policy")

    async def _status(self, server: str, status: UpstreamStatus, detail: str) -> None:
        level = logging.INFO if status == "up" else logging.WARNING
        log.log(level, "upstream %s is %s%s", server, status, f" ({detail})" if detail else "")
        if status in {"up", "down", "reconnecting"}:
            error = None if status == "up" else detail
            state: event_types.UpstreamState = status
            self._parts.events.bus.publish(event_types.upstream_status(server, state, error=error))
        if status == "up" and self.running:
            await self._parts.catalogue.changed(server)
        await self._parts.resources.upstream_status(server, status)
