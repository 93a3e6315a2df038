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
from toolsets.wrapper import WrapperToolset

__all__ = ["SEPARATOR", "PrefixedToolset"]

SEPARATOR = "__"


class PrefixedToolset(WrapperToolset):
    """Prefixes names; the renamed catalogue is cached while the wrapped one is unchanged."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        super().__init__(wrapped)
        self.prefix = prefix
        self._head = prefix + SEPARATOR
        self._source: dict[str, ToolDef] | None = None
        self._renamed: dict[str, ToolDef] = {}

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        inner = await self.wrapped.get_tools(ctx)
        if inner is not self._source:
            self._renamed = {
                self._head + name: dataclasses.replace(tool, name=self._head + name)
                for name, tool in inner.items()
            }
            self._source = inner
        return self._renamed

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        if not name.startswith(self._head):
            raise ToolNotFoundError(name)
        return await self.wrapped.call_tool(name[len(self._head) :], args, ctx)
