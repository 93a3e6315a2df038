"""`Gateway`: the composition root. Upstreams in, one toolset out."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio

from gateway.approvals.holding import Holding
from gateway.approvals.sealing import RequestStateSealer
from gateway.approvals.service import ApprovalService
from gateway.approvals.store import PendingStore
from gateway.config.model import GatewayConfig
from gateway.events import tool_events as event_types
from gateway.events.bus import EventBus
from gateway.events.webhooks import WebhookSink
from gateway.mcp.relay import Relay
from gateway.metrics import Metrics
from gateway.pins import PinRecord, ToolPins
from gateway.resources.guard import SurfaceGuard
from gateway.resources.service import Surface
from gateway.wiring.checks import load_config
from gateway.wiring.compose import compose
from policies import PolicyHolder
from toolsets._sdk_compat import check_sdk
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext, Principal
from toolsets.errors import (
    LockgateError,
    ToolCollisionError,
    ToolNotFoundError,
    ToolQuarantined,
)
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.server import MCPServerToolset, UpstreamStatus

__all__ = ["Gateway", "SessionToolsChanged"]

log = logging.getLogger("lockgate")
SessionToolsChanged = Callable[[str, str | None], Awaitable[None]]
"""Told ``(principal id, session id)`` of a session whose visible tools changed."""
SWEEP_INTERVAL = 5.0
"""Seconds between sweeps that record overdue pending calls as expired."""


class Gateway:
    """All configured upstreams (and local toolsets) behind one toolset, with policies,
    approvals and events.

    Use as an async context manager::

        async with Gateway.from_config("configs/gateway.yaml") as gw:
            tools = await gw.list_tools()
            result = await gw.call_tool("files__read_file", {"path": "README.md"})

    While running, ``gw.events`` is the event bus, ``gw.approvals`` the approval service,
    ``gw.policy`` the policy holder, ``gw.store`` the pending-call store and ``gw.surface``
    the upstreams' resources, prompts and completions (`gateway.resources`).
    """

    def __init__(self, config: GatewayConfig, *, toolsets: Sequence[Toolset] = ()) -> None:
        self.config = config
        self._listeners: list[ToolsChangedHandler] = []
        self._session_listeners: list[SessionToolsChanged] = []
        self._stack: contextlib.AsyncExitStack | None = None
        self._pins: dict[str, str] = {}
        self._warm = False
        self._warm_by = 0.0
        self._parts = compose(
            config,
            on_changed=self._tools_changed,
            on_status=self._status,
            warm_up=self._warm_up,
            extra=toolsets,
        )
        self.surface = Surface.for_config(
            config, self._parts.upstreams, guard=lambda: self.surface_guard, ready=self._warm_up
        )
        self._relay = Relay(self._parts.upstreams)

    @classmethod
    def from_config(cls, path: str | Path, *, toolsets: Sequence[Toolset] = ()) -> Gateway:
        """A gateway for the config file at ``path`` (not started yet)."""
        return cls(load_config(path), toolsets=toolsets)

    @property
    def events(self) -> EventBus:
        """The event bus (subscribe with ``gw.events.subscribe(["tool.*"])``)."""
        return self._parts.events.bus

    @property
    def event_stream(self) -> EventBus:
        """What event subscribers (SSE, webhooks) read: with the PostgreSQL backend every
        replica's events in one order, else `events`."""
        return self._parts.events.stream

    @property
    def approvals(self) -> ApprovalService:
        """Creates, decides and settles pending calls."""
        return self._parts.approvals

    @property
    def holding(self) -> Holding:
        """The pending calls whose caller this gateway holds open right now."""
        return self._parts.holding

    @property
    def store(self) -> PendingStore:
        """The durable pending-call store."""
        return self._parts.approvals.store

    @property
    def metrics(self) -> Metrics:
        """Prometheus metrics of this gateway (its own registry)."""
        return self._parts.metrics

    @property
    def policy(self) -> PolicyHolder:
        """The current policy (atomically reloadable)."""
        return self._parts.policy

    @property
    def relay(self) -> Relay:
        """Upstream requests to the client (parked 2026-07-28 calls) and log messages."""
        return self._relay

    @property
    def sealer(self) -> RequestStateSealer:
        """Seals ``request_state`` for 2026-07-28 callers answering an approval."""
        return self._parts.sealer

    @property
    def upstreams(self) -> dict[str, MCPServerToolset]:
        """Upstream MCP server toolsets by server name."""
        return self._parts.upstreams

    @property
    def root(self) -> Toolset:
        """The outermost toolset (visibility, validation, policy, approvals, events, upstreams)."""
        return self._parts.root

    @property
    def surface_guard(self) -> SurfaceGuard:
        """The policy over resources and prompts: what listings show, and each read and get."""
        return self._parts.surface_guard

    def on_tools_changed(self, handler: ToolsChangedHandler) -> None:
        """Call ``handler`` whenever the aggregated catalogue changed."""
        self._listeners.append(handler)

    async def list_tools(self, ctx: CallContext | None = None) -> list[ToolDef]:
        """The tools visible to ``ctx`` (anonymous when omitted)."""
        return list((await self.tools(ctx)).values())

    def on_session_tools_changed(self, handler: SessionToolsChanged) -> None:
        """Call ``handler`` when what one session may see changed (a call unlocked or locked
        tools there): only that session is to be told."""
        self._session_listeners.append(handler)

    async def tools(self, ctx: CallContext | None = None) -> dict[str, ToolDef]:
        """The visible tools by exposed name (the cached catalogue; do not mutate)."""
        ctx = ctx or CallContext()
        await self._warm_up()
        await self._parts.sessions.ensure(ctx)
        return await self.root.get_tools(ctx)

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until every upstream made its first connection attempt (at most ``timeout``
        seconds; default: the longest ``connect_timeout``); True when all are up."""
        longest = max((u.connect_timeout for u in self.upstreams.values()), default=0.0)
        with anyio.move_on_after(longest + 1 if timeout is None else timeout):
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.wait_ready, math.inf)
        return all(u.status == "up" for u in self.upstreams.values())

    async def _warm_up(self) -> None:
        """The first listing, call or decision waits (until ``startup_wait`` after start) for
        upstreams still making their first connection; later ones join with list_changed."""
        if not self._warm:
            await self.wait_ready(max(self._warm_by - anyio.current_time(), 0.0))
            self._warm = True
            await self._check_policy_names()

    async def _check_policy_names(self) -> None:
        """Tool names the policy's session options name must exist (logged with their place
        in the policy file; a gate on a missing tool never opens)."""
        try:
            names = (await self._parts.served.get_tools(CallContext())).keys()
        except LockgateError:  # a colliding catalogue: listings say so
            return
        for issue in self.policy.current.check_tool_names(names):
            log.error("policy: %s (is its server down?)", issue)

    async def call_tool(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: CallContext | None = None
    ) -> ToolResult:
        """Call one tool through the whole chain: the tool is looked up here, once, in what
        ``ctx`` may see, and travels down the chain with the call.

        Raises:
            ToolNotFoundError: the tool does not exist or is hidden from ``ctx``.
            ToolQuarantined: its definition changed upstream and waits for an approver.
            UpstreamError: its server is down, lost the connection, timed out or answered with
                a JSON-RPC error (`UpstreamRequestError`).
            InputRequired: a 2026-07-28 caller is asked to approve (the MCP face answers it).
            BackChannelRequired: a 2025-11-25 caller would be asked, and ``ctx`` cannot ask it.
        """
        ctx = ctx or CallContext()
        tools = await self.tools(ctx)
        decider = self._parts.decider
        tool = tools.get(name) or await self._refusable(name, args or {}, ctx)
        seen = decider.visibility_key(ctx)
        try:
            return await self.root.call_tool(name, args or {}, ctx, tool)
        finally:
            await self._parts.sessions.settle(ctx)  # replicas: saved before it is answered
            if decider.visibility_key(ctx) != seen:
                await self._session_changed(ctx, tools)

    async def _refusable(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolDef:
        """A tool hidden from ``ctx``'s listing whose call the policy refuses with a message
        (a session gate: "call X first"), so the model reads why; else unknown.

        Raises:
            ToolQuarantined: its definition changed upstream and waits for an approver.
            ToolNotFoundError: unknown to ``ctx``.
        """
        decider = self._parts.decider
        held = self._parts.pins.quarantined(name)
        if held is not None and decider.visible(ctx, held[0]):  # else: unknown to ctx
            raise ToolQuarantined(name, held[1].fields())
        tool = (await self._parts.served.get_tools(ctx)).get(name)
        if tool is None or decider.decide(tool, args, ctx).effect != "deny":
            raise ToolNotFoundError(name)
        return tool

    async def _session_changed(self, ctx: CallContext, before: Mapping[str, ToolDef]) -> None:
        """The call changed what its session's listing reads: tell that session if its tools
        changed (calls in flight finish; the next listing shows the change)."""
        if (await self.root.get_tools(ctx)).keys() != before.keys():
            for listener in list(self._session_listeners):
                await listener(ctx.principal.id, ctx.session_id)

    @property
    def pins(self) -> ToolPins:
        """Tool pins and the quarantine of changed definitions."""
        return self._parts.pins

    async def accept_pin(self, name: str, *, pin: str, by: Principal) -> PinRecord:
        """Accept the quarantined definition of ``name`` (see `ToolPins.accept`); clients are
        told the catalogue changed."""
        record = await self._parts.pins.accept(name, pin=pin, by=by)
        await self._tools_changed(record.server)
        return record

    def health(self) -> dict[str, Any]:
        """Per-upstream status, for ``/healthz``."""
        servers = {
            name: {
                "status": up.status,
                "detail": up.detail,
                "protocol": up.protocol_version,
                "tools": len(up.tools),
            }
            for name, up in self.upstreams.items()
        }
        ok = all(s["status"] == "up" for s in servers.values())
        return {"status": "ok" if ok else "degraded", "servers": servers}

    def closing(self) -> None:
        """Mark the gateway as shutting down: held calls interrupted now stay pending."""
        self._parts.approvals.closing = True

    async def _catalogue_pins(self) -> dict[str, str]:
        tools = await self._parts.served.get_tools(CallContext())
        return {name: tool.pin for name, tool in tools.items()}

    async def _tools_changed(self, source: str) -> None:
        try:
            pins = await self._catalogue_pins()
        except ToolCollisionError as exc:  # a first catalogue that collides: listings say so
            log.error("upstream %s: %s", source, exc)
            return
        changed = event_types.tools_changed(self._pins, pins, server=source)
        self._pins = pins
        if changed is not None:
            self.events.publish(changed)
        if not self._warm:  # nobody has listed yet: the first listing will show it all
            return
        for listener in list(self._listeners):
            await listener(source)

    async def _status(self, server: str, status: UpstreamStatus, detail: str) -> None:
        level = logging.INFO if status == "up" else logging.WARNING
        log.log(level, "upstream %s is %s%s", server, status, f" ({detail})" if detail else "")
        if status in {"up", "down", "reconnecting"}:
            error = None if status == "up" else detail
            state: event_types.UpstreamState = status
            self.events.publish(event_types.upstream_status(server, state, error=error))
        if status == "up" and self._stack is not None:
            await self._tools_changed(server)
        await self.surface.upstream_status(server, status)

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise LockgateError("Gateway is already running")
        check_sdk()  # the SDK's private names we rely on, or a clear error naming the fix
        async with contextlib.AsyncExitStack() as stack:
            # The store first: with PostgreSQL it holds the pool the event sinks drain into.
            await stack.enter_async_context(self._parts.approvals.store)
            await self._start_events(stack)
            stack.push_async_callback(self._parts.approvals.grants.store.close)
            stack.push_async_callback(self._parts.pins.store.close)
            await stack.enter_async_context(self._parts.sessions)
            scripts = self._parts.scripts
            if scripts is not None:  # sandbox workers start and stop with the gateway
                await stack.enter_async_context(scripts.sandbox)
                scripts.call, scripts.visible = self.call_tool, self.tools
            report = await self._parts.approvals.store.recover()
            if report.interrupted or report.expired:
                log.warning(
                    "recovered pending calls: %d interrupted, %d expired, %d pending",
                    len(report.interrupted),
                    len(report.expired),
                    report.pending,
                )
            await stack.enter_async_context(self._relay)  # before upstreams, closed after them
            await stack.enter_async_context(self.surface)  # renews subscriptions as upstreams come
            # Upstreams connect in the background: the gateway serves at once (see `_warmed`).
            await stack.enter_async_context(self._parts.root)
            self._warm_by = anyio.current_time() + self.config.startup_wait
            sweeper = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(sweeper.cancel_scope.cancel)
            sweeper.start_soon(self._sweep_expired)
            if self._parts.events.cluster is not None:
                sweeper.start_soon(self._follow_pin_acceptances)
            if self.config.policies.watch and self.config.policies.files:
                tg = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(tg.cancel_scope.cancel)
                tg.start_soon(self._parts.policy.watch)
                tg.start_soon(self._announce_reloads)
            self._stack = stack.pop_all()
        return self

    async def _sweep_expired(self) -> None:
        # Expiry is its own outcome: announce it (and keep the pending gauge honest).
        while True:
            await self._parts.approvals.store.sweep_expired()  # the store's listener announces each
            await anyio.sleep(SWEEP_INTERVAL)

    async def _follow_pin_acceptances(self) -> None:
        # A definition accepted on any replica is served here too (pins are shared).
        async with self.event_stream.subscribe(["tool.pin_accepted"], name="pins") as accepted:
            async for event in accepted:
                await self._parts.pins.reload()
                await self._tools_changed(str(event.data.get("server", "")))

    async def _announce_reloads(self) -> None:
        # A new policy can show or hide tools: clients re-list.
        while True:
            if not await self._parts.policy.wait_reload():
                await self._check_policy_names()
                for listener in list(self._listeners):
                    await listener("policy")

    async def _start_events(self, stack: contextlib.AsyncExitStack) -> None:
        events, metrics = self._parts.events, self._parts.metrics
        stack.callback(metrics.track(events.bus))
        if events.audit is not None and events.audit_sink is not None:
            await stack.enter_async_context(events.audit)
            await stack.enter_async_context(events.audit_sink)
        if events.cluster is not None:
            await stack.enter_async_context(events.cluster)
        if self.config.events.webhooks:
            webhooks = self.config.events.webhooks
            sink = WebhookSink(events.stream, webhooks, metrics=metrics, claim=events.claims)
            await stack.enter_async_context(sink)
        stack.callback(events.bus.close)
        if events.cluster is not None:  # ends the webhooks' and SSE streams on the feed too
            stack.callback(events.cluster.feed.close)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            for upstream in self.upstreams.values():  # every server's shutdown at once
                upstream.stop_soon()
            await stack.aclose()
        return None
