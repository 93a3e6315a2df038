"""`Gateway`: the facade a user holds. Upstreams in, one toolset out.

Construction runs the spine once: the config, `gateway.wiring.compose` (every part, built with
what it needs), `gateway.runtime` (the entry of every call, and what starts and stops), and the
faces that hold the gateway (`gateway.mcp`, `gateway.http`, `gateway.adapters`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from gateway.approvals.service import ApprovalService
from gateway.approvals.store import PendingStore
from gateway.config.model import GatewayConfig
from gateway.events.bus import EventBus
from gateway.metrics import Metrics
from gateway.pins import PinRecord, ToolPins
from gateway.runtime.entry import CallEntry, SessionToolsChanged
from gateway.runtime.lifecycle import GatewayRuntime
from gateway.wiring.checks import load_config
from gateway.wiring.compose import compose
from policies import PolicyHolder
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext, Principal
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.server import MCPServerToolset

__all__ = ["Gateway", "SessionToolsChanged"]


class Gateway:
    """All configured upstreams (and local toolsets) behind one toolset, with policies,
    approvals and events.

    Use as an async context manager::

        async with Gateway.from_config("configs/gateway.yaml") as gw:
            tools = await gw.list_tools()
            result = await gw.call_tool("files__read_file", {"path": "README.md"})

    While running, ``gw.events`` is the event bus, ``gw.approvals`` the approval service,
    ``gw.policy`` the policy holder and ``gw.store`` the pending-call store; ``gw.parts`` holds
    every part (`gateway.runtime.Parts`), such as ``gw.parts.resources``, the upstreams'
    resources, prompts and completions.
    """

    def __init__(self, config: GatewayConfig, *, toolsets: Sequence[Toolset] = ()) -> None:
        self.config = config
        self._entry = CallEntry(lambda calls: compose(config, calls, extra=toolsets))
        self.parts = self._entry.parts
        self._runtime = GatewayRuntime(config, self.parts)

    @classmethod
    def from_config(cls, path: str | Path, *, toolsets: Sequence[Toolset] = ()) -> Gateway:
        """A gateway for the config file at ``path`` (not started yet)."""
        return cls(load_config(path), toolsets=toolsets)

    @property
    def events(self) -> EventBus:
        """The event bus (subscribe with ``gw.events.subscribe(["tool.*"])``)."""
        return self.parts.events.bus

    @property
    def approvals(self) -> ApprovalService:
        """Creates, decides and settles pending calls."""
        return self.parts.approvals

    @property
    def store(self) -> PendingStore:
        """The durable pending-call store."""
        return self.parts.approvals.store

    @property
    def policy(self) -> PolicyHolder:
        """The current policy (atomically reloadable)."""
        return self.parts.policy

    @property
    def pins(self) -> ToolPins:
        """Tool pins and the quarantine of changed definitions."""
        return self.parts.pins

    @property
    def metrics(self) -> Metrics:
        """Prometheus metrics of this gateway (its own registry)."""
        return self.parts.metrics

    @property
    def upstreams(self) -> dict[str, MCPServerToolset]:
        """Upstream MCP server toolsets by server name."""
        return self.parts.upstreams

    async def tools(self, ctx: CallContext | None = None) -> dict[str, ToolDef]:
        """The visible tools by exposed name (the cached catalogue; do not mutate)."""
        return await self._entry.tools(ctx)

    async def list_tools(self, ctx: CallContext | None = None) -> list[ToolDef]:
        """The tools visible to ``ctx`` (anonymous when omitted)."""
        return list((await self.tools(ctx)).values())

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
        return await self._entry.call_tool(name, args, ctx)

    def on_tools_changed(self, handler: ToolsChangedHandler) -> None:
        """Call ``handler`` whenever the aggregated catalogue changed."""
        self.parts.catalogue.on_tools_changed(handler)

    def on_session_tools_changed(self, handler: SessionToolsChanged) -> None:
        """Call ``handler`` when what one session may see changed (a call unlocked or locked
        tools there): only that session is to be told."""
        self._entry.on_session_tools_changed(handler)

    async def accept_pin(self, name: str, *, pin: str, by: Principal) -> PinRecord:
        """Accept the quarantined definition of ``name`` (see `ToolPins.accept`); clients are
        told the catalogue changed."""
        record = await self.parts.pins.accept(name, pin=pin, by=by)
        await self.parts.catalogue.changed(record.server)
        return record

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until every upstream made its first connection attempt (at most ``timeout``
        seconds; default: the longest ``connect_timeout``); True when all are up."""
        return await self.parts.readiness.wait_ready(timeout)

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
        self._runtime.closing()

    async def __aenter__(self) -> Self:
        await self._runtime.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._runtime.__aexit__(exc_type, exc, tb)
