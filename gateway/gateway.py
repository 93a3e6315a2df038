"""`Gateway`: the composition root. Upstreams in, one toolset out."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio

from gateway.config import GatewayConfig, load_config
from gateway.upstreams import build_upstream
from toolsets.abstract import Toolset, ToolsChangedHandler
from toolsets.combined import CombinedToolset
from toolsets.context import CallContext
from toolsets.errors import LockgateError, ToolCollisionError
from toolsets.mcp_server import MCPServerToolset, UpstreamStatus
from toolsets.prefixed import PrefixedToolset
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["Gateway"]

log = logging.getLogger("lockgate")


class Gateway:
    """All configured upstreams (and local toolsets) behind one toolset.

    Use as an async context manager::

        async with Gateway.from_config("configs/gateway.yaml") as gw:
            tools = await gw.list_tools()
            result = await gw.call_tool("files__read_file", {"path": "README.md"})
    """

    def __init__(self, config: GatewayConfig, *, toolsets: Sequence[Toolset] = ()) -> None:
        self.config = config
        self.upstreams: dict[str, MCPServerToolset] = {}
        self._local = tuple(toolsets)
        self._listeners: list[ToolsChangedHandler] = []
        self._stack: contextlib.AsyncExitStack | None = None
        self.root: Toolset = CombinedToolset(())

    @classmethod
    def from_config(cls, path: str | Path, *, toolsets: Sequence[Toolset] = ()) -> Gateway:
        """A gateway for the config file at ``path`` (not started yet)."""
        return cls(load_config(path), toolsets=toolsets)

    def on_tools_changed(self, handler: ToolsChangedHandler) -> None:
        """Call ``handler`` whenever the aggregated catalogue changed."""
        self._listeners.append(handler)

    async def list_tools(self, ctx: CallContext | None = None) -> list[ToolDef]:
        """The tools visible to ``ctx`` (anonymous when omitted)."""
        return list((await self.root.get_tools(ctx or CallContext())).values())

    async def tools(self, ctx: CallContext | None = None) -> dict[str, ToolDef]:
        """The visible tools by exposed name (the cached catalogue; do not mutate)."""
        return await self.root.get_tools(ctx or CallContext())

    async def call_tool(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: CallContext | None = None
    ) -> ToolResult:
        """Call one tool through the whole chain.

        Raises:
            ToolNotFoundError: the tool does not exist or is hidden from ``ctx``.
        """
        return await self.root.call_tool(name, args or {}, ctx or CallContext())

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

    async def _tools_changed(self, source: str) -> None:
        try:
            await self.root.get_tools(CallContext())
        except ToolCollisionError as exc:
            log.error("catalogue change from %s refused: %s", source, exc)
            return
        for listener in list(self._listeners):
            await listener(source)

    async def _status(self, server: str, status: UpstreamStatus, detail: str) -> None:
        level = logging.INFO if status == "up" else logging.WARNING
        log.log(level, "upstream %s is %s%s", server, status, f" ({detail})" if detail else "")

    def _build(self) -> Toolset:
        children: list[Toolset] = []
        for server in self.config.enabled_servers():
            upstream = build_upstream(
                self.config, server, on_tools_changed=self._tools_changed, on_status=self._status
            )
            self.upstreams[server.name] = upstream
            children.append(PrefixedToolset(upstream, server.exposed_prefix))
        return CombinedToolset([*children, *self._local])

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise LockgateError("Gateway is already running")
        self.root = self._build()
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self.root)
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams.values():
                    tg.start_soon(upstream.wait_ready)
            await self.root.get_tools(CallContext())  # a collision fails startup here
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
            await stack.aclose()
        return None
