"""`ResourceLinksToolset`: resource URIs in an upstream's tools and results, served as the
gateway's."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.resource_uris import gateway_uri, rewrite_blocks
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.variants import Views
from toolsets.wrapper import WrapperToolset

__all__ = ["ResourceLinksToolset", "ui_meta"]

_UI_LEGACY_KEY = "ui/resourceUri"
"""The flat ``_meta`` key early MCP Apps servers set beside ``ui.resourceUri``."""


class ResourceLinksToolset(WrapperToolset):
    """Rewrites resource links and embedded resources in results to ``lockgate://{prefix}/...``
    (`toolsets.resource_uris`), and an MCP App tool's UI resource (``_meta.ui.resourceUri``)
    to ``ui://{prefix}/...``, so a client reads them through the gateway; sits right under
    `PrefixedToolset` above one MCP upstream, as the URI twin of its name prefix."""

    def __init__(self, wrapped: Toolset, prefix: str) -> None:
        super().__init__(wrapped)
        self.prefix = prefix
        self._views: Views[dict[str, ToolDef]] = Views()

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        version, variant = self.wrapped.version, self.wrapped.variant(ctx)
        linked = self._views.get(variant, version)
        if linked is None:
            tools = await self.wrapped.get_tools(ctx)
            linked = {name: self._link(tool) for name, tool in tools.items()}
            self._views.put(variant, version, linked)
        return linked

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        result = await self.wrapped.call_tool(name, args, ctx, tool)
        content = rewrite_blocks(result.wire["content"], self.prefix)
        if content is None:
            return result
        return ToolResult.from_wire({**result.wire, "content": content})

    def _link(self, tool: ToolDef) -> ToolDef:
        meta = ui_meta(tool.meta, self.prefix)
        return tool if meta is None else dataclasses.replace(tool, meta=meta)


def ui_meta(meta: Mapping[str, Any] | None, prefix: str) -> dict[str, Any] | None:
    """``meta`` with its MCP Apps UI resource URIs served as the gateway's (both the
    ``ui.resourceUri`` and the flat ``ui/resourceUri`` forms); None when it names none."""
    if not meta:
        return None
    ui = meta.get("ui")
    link = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    flat = meta.get(_UI_LEGACY_KEY)
    if not isinstance(link, str) and not isinstance(flat, str):
        return None
    served = dict(meta)
    if isinstance(ui, Mapping) and isinstance(link, str):
        served["ui"] = {**ui, "resourceUri": gateway_uri(prefix, link)}
    if isinstance(flat, str):
        served[_UI_LEGACY_KEY] = gateway_uri(prefix, flat)
    return served
