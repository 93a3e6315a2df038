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
from toolsets.variants import Views

__all__ = ["CombinedToolset"]

log = logging.getLogger("lockgate.toolsets")


class CombinedToolset(Toolset):
    """Merges catalogues; the same exposed name from two toolsets is a `ToolCollisionError`.

    One merged catalogue per variant (`Toolset.variant`: a child serving a caller the catalogue
    of its own connection); a name belongs to the same child in every variant."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = tuple(toolsets)
        self._views: Views[dict[str, ToolDef]] = Views()
        self._good: dict[str, ToolDef] | None = None
        self._owner: dict[str, Toolset] = {}
        self._stack: contextlib.AsyncExitStack | None = None

    @property
    def version(self) -> Hashable:
        return tuple(toolset.version for toolset in self.toolsets)

    def variant(self, ctx: CallContext) -> Hashable:
        variants = tuple(toolset.variant(ctx) for toolset in self.toolsets)
        return variants if any(v is not None for v in variants) else None

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        version, variant = self.version, self.variant(ctx)
        tools = self._views.get(variant, version)
        if tools is None:
            sources = [await toolset.get_tools(ctx) for toolset in self.toolsets]
            try:
                tools = self._good = self._merge(sources)
            except ToolCollisionError as exc:
                if self._good is None:
                    raise  # at startup: refuse to start
                # Later (a list_changed): keep serving the last good catalogue.
                log.error("catalogue change refused, the last good catalogue stays: %s", exc)
                tools = self._good
            self._views.put(variant, version, tools)
        return tools

    def _merge(self, sources: list[dict[str, ToolDef]]) -> dict[str, ToolDef]:
        tools: dict[str, ToolDef] = {}
        owner: dict[str, Toolset] = {}
        for toolset, catalogue in zip(self.toolsets, sources, strict=True):
            for name, tool in catalogue.items():
                if name in tools:
                    raise ToolCollisionError(name, tools[name].server, tool.server)
                tools[name] = tool
                owner[name] = toolset
        self._owner.update(owner)  # every variant's names: a name has one owner
        return tools

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
