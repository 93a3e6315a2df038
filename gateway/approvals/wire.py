"""Tool results as stored in pending calls (MCP wire JSON) and back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from toolsets.result import ToolResult

__all__ = ["UPSTREAM_TASK", "result_from_wire", "result_to_wire", "upstream_task_of"]

UPSTREAM_TASK = "lockgate/upstream_task"
"""The ``_meta`` key of the stand-in result of an approved call that ran as an upstream task:
``{"server": ..., "taskId": ...}``; that task's outcome replaces it when it ends
(`gateway.tasks.held`)."""


def result_to_wire(result: ToolResult) -> dict[str, Any]:
    """``{"content": [...], "structuredContent": ..., "isError": ...}``."""
    return dict(result.wire)


def result_from_wire(data: Mapping[str, Any]) -> ToolResult:
    """The `ToolResult` stored by `result_to_wire`, or posted by a worker (validated: it comes
    from outside)."""
    checked = types.CallToolResult.model_validate(dict(data))
    return ToolResult.from_wire(checked.model_dump(by_alias=True, mode="json", exclude_none=True))


def upstream_task_of(result: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The upstream task a stored result stands in for (`UPSTREAM_TASK`), if any."""
    meta = (result or {}).get("_meta")
    task = meta.get(UPSTREAM_TASK) if isinstance(meta, dict) else None
    return task if isinstance(task, dict) else None
