"""`GroupLoaders`: one ``load_<group>`` tool per tool group the policy declares.

A group's tools stay hidden in a session until its loader ran there (the policy's ``groups``).
Calling ``load_math`` loads the group into the caller's session and answers with what is now
available; the session is told its tool list changed. A loader is a tool like any other: rules
may hide, deny or hold it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Final

from gateway.sessions.book import SessionBook
from policies import PolicyHolder
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["LOADER_PREFIX", "LOADER_SERVER", "GroupLoaders"]

LOADER_PREFIX: Final = "load_"
LOADER_SERVER: Final = "lockgate"
"""The server name of the loader tools in events and policies."""
_NO_ARGS: Final = {"type": "object", "properties": {}, "additionalProperties": False}


class GroupLoaders(Toolset):
    """The loaders of the current policy's groups (the catalogue follows policy reloads)."""

    def __init__(self, policy: PolicyHolder, sessions: SessionBook) -> None:
        self._policy = policy
        self._sessions = sessions
        self._tools: dict[str, ToolDef] = {}
        self._for: str | None = None

    @property
    def label(self) -> str:
        return "groups"

    @property
    def version(self) -> Hashable:
        return self._policy.current.version

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        engine = self._policy.current
        if self._for != engine.version:
            self._tools = {
                f"{LOADER_PREFIX}{group}": _loader(group, members)
                for group, members in engine.groups.items()
            }
            self._for = engine.version
        return self._tools

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        group = name.removeprefix(LOADER_PREFIX)
        members = self._policy.current.groups.get(group)
        if members is None:  # the policy was reloaded without it since the lookup
            return ToolResult.error(f"There is no tool group {group!r} any more.")
        state = await self._sessions.ensure(ctx)
        state.load_group(group)
        self._sessions.changed(ctx)
        loaded = ", ".join(members)
        return ToolResult.text(f"Loaded the {group} tools: {loaded}. They can be called now.")


def _loader(group: str, members: tuple[str, ...]) -> ToolDef:
    return ToolDef(
        name=f"{LOADER_PREFIX}{group}",
        description=(
            f"Load the {group} tools ({', '.join(members)}) into this session; "
            "they are not available before."
        ),
        input_schema=_NO_ARGS,
        server=LOADER_SERVER,
    )
