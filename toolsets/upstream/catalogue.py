"""`UpstreamCatalogue`: the tools of one upstream server, listed after every (re)connect and
again on ``tools/list_changed`` (a legacy notification, or a ``subscriptions/listen`` event)."""

from __future__ import annotations

import logging
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp import Client
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.abstract import ToolsChangedHandler
from toolsets.tooldef import ToolDef
from toolsets.upstream.convert import tool_def_from_mcp
from toolsets.upstream.failures import describe

__all__ = ["UpstreamCatalogue", "listens"]

log = logging.getLogger("lockgate.upstream")


class UpstreamCatalogue:
    """The current catalogue of one server (unprefixed names) and its version.

    Args:
        server: The server's name.
        max_description: Titles and descriptions are cut to this many characters (0: no limit).
        on_tools_changed: Told after each re-list that followed a change.
    """

    def __init__(
        self,
        server: str,
        *,
        max_description: int,
        on_tools_changed: ToolsChangedHandler | None = None,
    ) -> None:
        self.server = server
        self.max_description = max_description
        self._on_tools_changed = on_tools_changed
        self.tools: dict[str, ToolDef] = {}
        """The current catalogue, as last listed."""
        self.version = 0
        """Counts the listings."""
        self._stale = anyio.Event()

    async def refresh(self, client: Client) -> None:
        """List every page of the server's tools and make them the catalogue."""
        tools: dict[str, ToolDef] = {}
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                converted = tool_def_from_mcp(
                    tool, server=self.server, max_description=self.max_description
                )
                if converted is not None:
                    tools[converted.name] = converted
                    if converted.flags and converted.name not in self.tools:
                        log.warning(
                            "server %s: tool %r is flagged: %s",
                            self.server,
                            converted.name,
                            ", ".join(converted.flags),
                        )
            cursor = page.next_cursor
            if cursor is None:
                break
        self.tools = tools
        self.version += 1

    def new_session(self) -> None:
        """A new session lists afresh: changes heard on the last one are moot."""
        self._stale = anyio.Event()

    def changed(self) -> None:
        """The server said its tools changed: `follow` lists them again."""
        self._stale.set()

    async def follow(self, client: Client) -> None:
        """Re-list after list_changed: however many arrive during a re-list, one more follows
        (a flood of notifications costs two listings, not one per notification)."""
        while True:
            await self._stale.wait()
            self._stale = anyio.Event()
            await self.refresh(client)
            if self._on_tools_changed is not None:
                await self._on_tools_changed(self.server)

    async def listen(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow list_changed; started once the server acknowledged the subscription."""
        started = False
        try:
            caps = client.server_capabilities  # their events reach the message handler too
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=_announces(caps.prompts),
                resources_list_changed=_announces(caps.resources),
            ) as subscription:
                task_status.started()
                started = True
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self.changed()
        except Exception as exc:  # the listen stream is best effort; calls still work
            log.warning("upstream %s: subscriptions/listen ended: %s", self.server, describe(exc))
        if not started:
            task_status.started()


def listens(client: Client) -> bool:
    """Whether changes reach ``client`` by ``subscriptions/listen`` (a modern server that
    announces list changes)."""
    caps = client.server_capabilities
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    return modern and any(_announces(c) for c in (caps.tools, caps.prompts, caps.resources))


def _announces(capability: Any) -> bool:
    return capability is not None and bool(capability.list_changed)
