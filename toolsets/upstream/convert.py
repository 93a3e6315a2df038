"""Conversions between MCP SDK types and ours, in one place."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from pydantic import BaseModel

from toolsets.prefixed import SEPARATOR
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef
from toolsets.upstream.flags import tool_flags
from toolsets.upstream.sanitize import (
    DEFAULT_MAX_DESCRIPTION,
    served_annotations,
    served_schema,
    served_text,
)

__all__ = [
    "tool_def_from_mcp",
    "tool_def_to_mcp",
    "tool_result_from_mcp",
    "tool_result_from_wire",
    "tool_result_to_mcp",
]

log = logging.getLogger("lockgate.upstream")
GATEWAY_META = "lockgate/"
"""The ``_meta`` keys the gateway owns on the tools it lists; an upstream's are dropped."""


def tool_def_from_mcp(
    tool: types.Tool, *, server: str, max_description: int = DEFAULT_MAX_DESCRIPTION
) -> ToolDef | None:
    """Our `ToolDef` for an upstream tool, or None (logged) when its name cannot be exposed.

    Flags are taken from the upstream text as sent; the definition served (and pinned) has its
    titles and descriptions escaped and cut to ``max_description`` characters (0: no limit), see
    `toolsets.upstream.sanitize`. Names are not rewritten: one outside ``[A-Za-z0-9_-]`` is refused.
    """
    if not TOOL_NAME_RE.fullmatch(tool.name) or SEPARATOR in tool.name:
        log.warning(
            "server %s: tool %r skipped: name is not [A-Za-z0-9_-]{1,64}", server, tool.name
        )
        return None
    meta = {k: v for k, v in (tool.meta or {}).items() if not k.startswith(GATEWAY_META)}
    limit = max_description
    return ToolDef(
        name=tool.name,
        title=served_text(tool.title, limit) if tool.title is not None else None,
        description=served_text(tool.description, limit) if tool.description is not None else None,
        input_schema=served_schema(tool.input_schema, limit),
        output_schema=served_schema(tool.output_schema, limit)
        if tool.output_schema is not None
        else None,
        annotations=served_annotations(_wire(tool.annotations), limit),
        server=server,
        upstream_name=tool.name,
        flags=tool_flags(tool.description, tool.input_schema),
        icons=tuple(_dump(icon) for icon in tool.icons) if tool.icons else None,
        execution=_wire(tool.execution),
        meta=meta or None,
    )


def _wire(model: BaseModel | None) -> dict[str, Any] | None:
    return _dump(model) if model else None


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def tool_def_to_mcp(tool: ToolDef, *, offer_tasks: bool = False) -> types.Tool:
    """The MCP wire `Tool` for an exposed `ToolDef`; annotations and output schema unchanged.

    ``offer_tasks``: the gateway answers some calls of the tool with a task of its own (a held
    call, `approval.as_task`), so a tool whose upstream lists no ``execution.taskSupport`` (or
    ``forbidden``) is listed with ``optional``; the pin still covers the upstream's definition.
    """
    execution = tool.execution
    if offer_tasks and (execution or {}).get("taskSupport", "forbidden") == "forbidden":
        execution = {**(execution or {}), "taskSupport": "optional"}
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=types.ToolAnnotations.model_validate(tool.annotations)
        if tool.annotations
        else None,
        icons=[types.Icon.model_validate(icon) for icon in tool.icons] if tool.icons else None,
        execution=types.ToolExecution.model_validate(execution) if execution else None,
        _meta={
            **(tool.meta or {}),
            "lockgate/server": tool.server,
            "lockgate/pin": tool.pin,
            "lockgate/flags": list(tool.flags),
        },
    )


def tool_result_from_wire(data: dict[str, Any]) -> ToolResult:
    """Our `ToolResult` for an upstream result as decoded from its JSON (kept, not copied).

    The upstream's ``serverInfo`` stamp describes that hop only; left in, the downstream result
    would not carry the gateway's own identity.
    """
    meta = data.get("_meta")
    if isinstance(meta, dict) and types.SERVER_INFO_META_KEY in meta:
        data = dict(data)
        data["_meta"] = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY} or None
    return ToolResult.from_wire(data)


def tool_result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """Our `ToolResult` for an upstream result the SDK client parsed."""
    return tool_result_from_wire(result.model_dump(by_alias=True, mode="json", exclude_none=True))


def tool_result_to_mcp(result: ToolResult) -> types.CallToolResult:
    """The MCP SDK model of one of our results (for the SDK's handlers)."""
    return types.CallToolResult.model_validate(result.wire)
