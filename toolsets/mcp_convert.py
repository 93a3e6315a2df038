"""Conversions between MCP SDK types and ours, in one place."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types

from toolsets.flags import tool_flags
from toolsets.prefixed import SEPARATOR
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef

__all__ = ["tool_def_from_mcp", "tool_def_to_mcp", "tool_result_from_mcp", "tool_result_to_mcp"]

log = logging.getLogger("lockgate.upstream")


def tool_def_from_mcp(tool: types.Tool, *, server: str) -> ToolDef | None:
    """Our `ToolDef` for an upstream tool, or None (logged) when its name cannot be exposed."""
    if not TOOL_NAME_RE.fullmatch(tool.name) or SEPARATOR in tool.name:
        log.warning(
            "server %s: tool %r skipped: name is not [A-Za-z0-9_-]{1,64}", server, tool.name
        )
        return None
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    )
    return ToolDef(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=annotations,
        server=server,
        upstream_name=tool.name,
        flags=tool_flags(tool.description, tool.input_schema),
    )


def tool_def_to_mcp(tool: ToolDef) -> types.Tool:
    """The MCP wire `Tool` for an exposed `ToolDef`; annotations and output schema unchanged."""
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=types.ToolAnnotations.model_validate(tool.annotations)
        if tool.annotations
        else None,
        _meta={
            "lockgate/server": tool.server,
            "lockgate/pin": tool.pin,
            "lockgate/flags": list(tool.flags),
        },
    )


def tool_result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """Our `ToolResult` for an upstream result (content blocks are kept as they are).

    The upstream's ``serverInfo`` stamp describes that hop only; left in, the SDK would not
    stamp the gateway's own identity on the downstream result.
    """
    meta = result.meta
    if meta and types.SERVER_INFO_META_KEY in meta:
        meta = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY} or None
    return ToolResult(
        content=tuple(result.content),
        structured_content=result.structured_content,
        is_error=bool(result.is_error),
        meta=meta,
    )


def tool_result_to_mcp(result: ToolResult) -> types.CallToolResult:
    """The MCP wire result for one of ours."""
    meta: Any = dict(result.meta) if result.meta else None
    return types.CallToolResult(
        content=list(result.content),
        structured_content=dict(result.structured_content)
        if result.structured_content is not None
        else None,
        is_error=result.is_error,
        _meta=meta,
    )
