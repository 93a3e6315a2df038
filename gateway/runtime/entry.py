"""`CallEntry`: the top of a gateway's call chain, where every listing and call enters."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gateway.runtime.parts import Parts
from toolsets.context import CallContext
from toolsets.errors import ToolNotFoundError, ToolQuarantined
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["CallEntry", "SessionToolsChanged"]

SessionToolsChanged = Callable[[str, str | None], Awaitable[None]]
"""Told ``(principal id, session id)`` of a session whose visible tools changed."""


class CallEntry:
    """Where the faces' calls and the script tools' sub-calls alike enter the chain.

    The chain holds the script tools, and their sub-calls re-enter it here, at the top, as the
    script's caller: so the entry is built first and builds the chain with itself in hand
    (``build(entry)``; `gateway.wiring.compose.compose`), and nothing is bound afterwards.

    Args:
        build: Builds the gateway's parts; script tools and hooks call back into its argument.
    """

    def __init__(self, build: Callable[[CallEntry], Parts]) -> None:
        self._session_listeners: list[SessionToolsChanged] = []
        self.parts = build(self)

    def on_session_tools_changed(self, handler: SessionToolsChanged) -> None:
        """Call ``handler`` when what one session may see changed (a call unlocked or locked
        tools there): only that session is to be told."""
        self._session_listeners.append(handler)

    async def tools(self, ctx: CallContext | None = None) -> dict[str, ToolDef]:
        """The tools visible to ``ctx`` by exposed name (the cached catalogue; do not mutate)."""
        ctx = ctx or CallContext()
        await self.parts.readiness.warm_up()
        await self.parts.sessions.ensure(ctx)
        return await self.parts.root.get_tools(ctx)

    async def call_tool(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: CallContext | None = None
    ) -> ToolResult:
        """Call one tool through the whole chain (see `gateway.Gateway.call_tool`)."""
        ctx = ctx or CallContext()
        tools = await self.tools(ctx)
        decider = self.parts.decider
        tool = tools.get(name) or await self._refusable(name, args or {}, ctx)
        seen = decider.visibility_key(ctx)
        try:
            return await self.parts.root.call_tool(name, args or {}, ctx, tool)
        finally:
            await self.parts.sessions.settle(ctx)  # replicas: saved before it is answered
            if decider.visibility_key(ctx) != seen:
                await self._session_changed(ctx, tools)

    async def _refusable(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolDef:
        """A tool hidden from ``ctx``'s listing whose call the policy refuses with a message
        (a session gate: "call X first"), so the model reads why; else unknown.

        Raises:
            ToolQuarantined: its definition changed upstream and waits for an approver.
            ToolNotFoundError: unknown to ``ctx``.
        """
        decider = self.parts.decider
        held = self.parts.pins.quarantined(name)
        if held is not None and decider.visible(ctx, held[0]):  # else: unknown to ctx
            raise ToolQuarantined(name, held[1].fields())
        tool = (await self.parts.served.get_tools(ctx)).get(name)
        if tool is None or decider.decide(tool, args, ctx).effect != "deny":
            raise ToolNotFoundError(name)
        return tool

    async def _session_changed(self, ctx: CallContext, before: Mapping[str, ToolDef]) -> None:
        """The call changed what its session's listing reads: tell that session if its tools
        changed (calls in flight finish; the next listing shows the change)."""
        if (await self.parts.root.get_tools(ctx)).keys() != before.keys():
            for listener in list(self._session_listeners):
                await listener(ctx.principal.id, ctx.session_id)
