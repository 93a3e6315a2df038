"""`FilteredToolset`: hides the tools a predicate rejects, from listing and from calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["FilteredToolset", "ToolFilter"]


class ToolFilter(Protocol):
    """Decides whether a tool is visible in a context."""

    def __call__(self, ctx: CallContext, tool: ToolDef) -> bool: ...


class FilteredToolset(WrapperToolset):
    """Keeps only the tools for which ``filter_func(ctx, tool)`` is true."""

    def __init__(self, wrapped: Toolset, filter_func: ToolFilter) -> None:
        super().__init__(wrapped)
        self.filter_func = filter_func

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        inner = await self.wrapped.get_tools(ctx)
        return {name: tool for name, tool in inner.items() if self.filter_func(ctx, tool)}

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        tool = (await self.wrapped.get_tools(ctx)).get(name)
        if tool is None or not self.filter_func(ctx, tool):
            raise ToolNotFoundError(name)
        return await self.wrapped.call_tool(name, args, ctx)
