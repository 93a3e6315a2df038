"""`PrefixedToolset`: exposes every tool as ``{prefix}__{name}``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.variants import Views
from toolsets.wrapper import WrapperToolset

__all__ = ["SEPARATOR", "PrefixedToolset"]

SEPARATOR = "__"


class PrefixedToolset(WrapperToolset):
    """Prefixes names; the renamed catalogue and its reverse map are rebuilt per version (and
    kept per variant: `Toolset.variant`)."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        super().__init__(wrapped)
        self.prefix = prefix
        self._head = prefix + SEPARATOR
        self._views: Views[tuple[dict[str, ToolDef], dict[str, ToolDef]]] = Views()

    async def _view(self, ctx: CallContext) -> tuple[dict[str, ToolDef], dict[str, ToolDef]]:
        """The renamed catalogue ``ctx`` gets, and the wrapped tool of each renamed name."""
        version, variant = self.wrapped.version, self.wrapped.variant(ctx)
        view = self._views.get(variant, version)
        if view is None:
            inner = await self.wrapped.get_tools(ctx)
            renamed = {
                self._head + name: dataclasses.replace(tool, name=self._head + name)
                for name, tool in inner.items()
            }
            view = self._views.put(
                variant, version, (renamed, {self._head + n: t for n, t in inner.items()})
            )
        return view

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return (await self._view(ctx))[0]

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        inner = (await self._view(ctx))[1].get(name)
        if inner is None:
            raise ToolNotFoundError(name)
        return await self.wrapped.call_tool(inner.name, args, ctx, inner)
