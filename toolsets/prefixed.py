"""`PrefixedToolset`: exposes every tool as ``{prefix}__{name}``."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from typing import Any

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["SEPARATOR", "PrefixedToolset"]

SEPARATOR = "__"
_NEVER = object()


class PrefixedToolset(WrapperToolset):
    """Prefixes names; the renamed catalogue and its reverse map are rebuilt per version."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        super().__init__(wrapped)
        self.prefix = prefix
        self._head = prefix + SEPARATOR
        self._renamed_at: Hashable = _NEVER
        self._renamed: dict[str, ToolDef] = {}
        self._inner: dict[str, ToolDef] = {}

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        version = self.wrapped.version
        if version != self._renamed_at:
            inner = await self.wrapped.get_tools(ctx)
            self._renamed = {
                self._head + name: dataclasses.replace(tool, name=self._head + name)
                for name, tool in inner.items()
            }
            self._inner = {self._head + name: tool for name, tool in inner.items()}
            self._renamed_at = version
        return self._renamed

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        inner = self._inner.get(name)
        if inner is None:
            raise ToolNotFoundError(name)
        return await self.wrapped.call_tool(inner.name, args, ctx, inner)
