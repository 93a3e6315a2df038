"""`WrapperToolset`: forwards every method, lifecycle included, to the wrapped toolset."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from types import TracebackType
from typing import Any, Self

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["WrapperToolset"]


class WrapperToolset(Toolset):
    """Base of every wrapper; subclasses override one or two methods."""

    def __init__(self, wrapped: Toolset) -> None:
        self.wrapped = wrapped

    @property
    def label(self) -> str:
        return f"{type(self).__name__}({self.wrapped.label})"

    @property
    def version(self) -> Hashable:
        return self.wrapped.version

    def variant(self, ctx: CallContext) -> Hashable:
        return self.wrapped.variant(ctx)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return await self.wrapped.get_tools(ctx)

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        return await self.wrapped.call_tool(name, args, ctx, tool)

    async def __aenter__(self) -> Self:
        await self.wrapped.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self.wrapped.__aexit__(exc_type, exc, tb)
