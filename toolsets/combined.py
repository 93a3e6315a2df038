"""`CombinedToolset`: several toolsets as one, routed by an explicit reverse map."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Hashable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ToolCollisionError, ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["CombinedToolset"]

log = logging.getLogger("lockgate.toolsets")
_NEVER = object()


class CombinedToolset(Toolset):
    """Merges catalogues; the same exposed name from two toolsets is a `ToolCollisionError`."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = tuple(toolsets)
        self._merged: Hashable = _NEVER
        self._tools: dict[str, ToolDef] = {}
        self._owner: dict[str, Toolset] = {}
        self._stack: contextlib.AsyncExitStack | None = None

    @property
    def version(self) -> Hashable:
        return tuple(toolset.version for toolset in self.toolsets)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        version = self.version
        if version != self._merged:
            sources = [await toolset.get_tools(ctx) for toolset in self.toolsets]
            try:
                self._merge(sources)
            except ToolCollisionError as exc:
                if self._merged is _NEVER:
                    raise  # at startup: refuse to start
                # Later (a list_changed): keep serving the last good catalogue.
                log.error("catalogue change refused, the last good catalogue stays: %s", exc)
            self._merged = version
        return self._tools

    def _merge(self, sources: list[dict[str, ToolDef]]) -> None:
        tools: dict[str, ToolDef] = {}
        owner: dict[str, Toolset] = {}
        for toolset, catalogue in zip(self.toolsets, sources, strict=True):
            for name, tool in catalogue.items():
                if name in tools:
                    raise ToolCollisionError(name, tools[name].server, tool.server)
                tools[name] = tool
                owner[name] = toolset
        self._tools, self._owner = tools, owner

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        toolset = self._owner.get(name)
        if toolset is None:  # the catalogue changed since the caller looked the tool up
            raise ToolNotFoundError(name)
        return await toolset.call_tool(name, args, ctx, tool)

    async def __aenter__(self) -> Self:
        async with contextlib.AsyncExitStack() as stack:
            for toolset in self.toolsets:
                await stack.enter_async_context(toolset)
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
            return await stack.__aexit__(exc_type, exc, tb)
        return None
