"""Tool results as stored in pending calls (MCP wire JSON) and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from toolsets.mcp_convert import tool_result_from_mcp, tool_result_to_mcp
from toolsets.result import ToolResult

__all__ = ["result_from_wire", "result_to_wire"]


def result_to_wire(result: ToolResult) -> dict[str, Any]:
    """``{"content": [...], "structuredContent": ..., "isError": ...}``."""
    wire = tool_result_to_mcp(result)
    return wire.model_dump(by_alias=True, mode="json", exclude_none=True)


def result_from_wire(data: Mapping[str, Any]) -> ToolResult:
    """The `ToolResult` stored by `result_to_wire` (or posted by a worker)."""
    return tool_result_from_mcp(types.CallToolResult.model_validate(dict(data)))
