"""`ExternalToolset`: tools defined by JSON schemas whose execution is delegated to an executor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ExternalToolset", "ToolExecutor"]


class ToolExecutor(Protocol):
    """Runs one call of an external tool (an upstream MCP session, a worker, ...)."""

    async def __call__(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult: ...


class ExternalToolset(Toolset):
    """A fixed catalogue of tool definitions; calls go to ``executor``."""

    def __init__(
        self, tool_defs: Iterable[ToolDef], executor: ToolExecutor, *, label: str = ""
    ) -> None:
        self._tools = {t.name: t for t in tool_defs}
        self._executor = executor
        self._label = label or "external"

    @property
    def label(self) -> str:
        return self._label

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self._tools

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        return await self._executor(tool, args, ctx)
