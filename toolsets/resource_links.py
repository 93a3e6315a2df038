"""`ResourceLinksToolset`: resource URIs in an upstream's tool results, served as the gateway's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.resource_uris import rewrite_blocks
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["ResourceLinksToolset"]


class ResourceLinksToolset(WrapperToolset):
    """Rewrites resource links and embedded resources in results to ``lockgate://{prefix}/...``
    (`toolsets.resource_uris`), so a client reads them through the gateway; sits right under
    `PrefixedToolset` above one MCP upstream, as the URI twin of its name prefix."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        super().__init__(wrapped)
        self.prefix = prefix

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        result = await self.wrapped.call_tool(name, args, ctx, tool)
        content = rewrite_blocks(result.wire["content"], self.prefix)
        if content is None:
            return result
        return ToolResult.from_wire({**result.wire, "content": content})
