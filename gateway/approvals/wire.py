"""Tool results as stored in pending calls (MCP wire JSON) and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from toolsets.result import ToolResult

__all__ = ["result_from_wire", "result_to_wire"]


def result_to_wire(result: ToolResult) -> dict[str, Any]:
    """``{"content": [...], "structuredContent": ..., "isError": ...}``."""
    return dict(result.wire)


def result_from_wire(data: Mapping[str, Any]) -> ToolResult:
    """The `ToolResult` stored by `result_to_wire`, or posted by a worker (validated: it comes
    from outside)."""
    checked = types.CallToolResult.model_validate(dict(data))
    return ToolResult.from_wire(checked.model_dump(by_alias=True, mode="json", exclude_none=True))
