"""A gateway task on the wire, in each era's shape.

2025-11-25 (core tasks): ``CreateTaskResult`` nests the task in ``task``; ``tasks/get`` and
``tasks/cancel`` answer the task itself; ``tasks/result`` the ``CallToolResult``; ``ttl`` and
``pollInterval``. 2026-07-28 (the ``io.modelcontextprotocol/tasks`` extension):
``CreateTaskResult`` is the task with ``resultType: "task"``; ``tasks/get`` answers the detailed
task (its ``result`` or ``error`` inlined); ``tasks/cancel`` an empty acknowledgement; ``ttlMs``
and ``pollIntervalMs``. A task's ``CallToolResult`` is kept as it was made (by a server of either
era, or the gateway) and answered in the asking client's era's shape (`era_result`): a
2025-11-25 client never reads 2026-07-28's ``resultType``; a 2026-07-28 client always does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result

from gateway.tasks.record import TaskRecord

__all__ = [
    "DEFAULT_POLL_MS",
    "NOT_FOUND",
    "created_result",
    "detailed_task",
    "era_result",
    "payload",
    "status_notification",
    "task_fields",
]

DEFAULT_POLL_MS: Final = 500
NOT_FOUND: Final = "Failed to retrieve task: Task not found"
"""The answer for a task that does not exist, expired, or belongs to someone else."""
LEGACY: Final = "2025-11-25"
MODERN: Final = "2026-07-28"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def task_fields(record: TaskRecord, *, modern: bool) -> dict[str, Any]:
    """The ``Task`` object of ``record`` (without status payloads)."""
    fields: dict[str, Any] = {
        "taskId": record.id,
        "status": record.status,
        "createdAt": _iso(record.created_at),
        "lastUpdatedAt": _iso(record.updated_at),
    }
    if record.status_message is not None:
        fields["statusMessage"] = record.status_message
    poll = record.poll_interval_ms or DEFAULT_POLL_MS
    if modern:
        fields.update(ttlMs=record.ttl_ms, pollIntervalMs=poll)
    else:
        fields.update(ttl=record.ttl_ms, pollInterval=poll)
    return fields


def created_result(record: TaskRecord, *, modern: bool) -> dict[str, Any]:
    """The ``CreateTaskResult`` answering the task-augmented ``tools/call`` (a held call's
    names its pending call in ``_meta["lockgate/pending"]``)."""
    if modern:
        result = {"resultType": "task", **task_fields(record, modern=True)}
    else:
        result = {"task": task_fields(record, modern=False)}
    if record.approval_id is not None:
        result["_meta"] = {"lockgate/pending": {"id": record.approval_id}}
    return result


def detailed_task(
    record: TaskRecord, *, modern: bool, input_requests: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What ``tasks/get`` answers (2026-07-28: with the result or error inlined).

    A 2026-07-28 ``input_required`` task always carries ``inputRequests`` (the extension's
    ``InputRequiredTask`` requires it): the server's ``input_requests`` the client may answer,
    or none (``{}``) for a task that waits on someone else (an approver, a pin review).
    """
    fields = task_fields(record, modern=modern)
    if modern:
        if record.status == "input_required":
            fields["inputRequests"] = dict(input_requests or {})
        if _delivered(record):
            fields["result"] = era_result(record.result or {}, modern=True)
        if record.status == "failed":
            fields["error"] = dict(record.error or _error(record))
        fields["resultType"] = "complete"
    return fields


def status_notification(record: TaskRecord) -> tuple[str, dict[str, Any]]:
    """The 2025-11-25 status notification of ``record``: ``(method, params)``."""
    return "notifications/tasks/status", task_fields(record, modern=False)


def payload(record: TaskRecord) -> dict[str, Any]:
    """What 2025-11-25's ``tasks/result`` answers for a finished task: the ``CallToolResult``.

    Raises:
        MCPError: the task failed (its error) or was cancelled.
    """
    related = {"io.modelcontextprotocol/related-task": {"taskId": record.id}}
    if _delivered(record):
        result = era_result(record.result or {}, modern=False)
        result["_meta"] = {**(result.get("_meta") or {}), **related}
        return result
    error = _error(record) if record.error is None else dict(record.error)
    raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))


def era_result(result: Mapping[str, Any], *, modern: bool) -> dict[str, Any]:
    """``result`` (a ``CallToolResult``, wire form) in one era's shape, as the SDK shapes a
    direct call's (its per-version surface): 2025-11-25 without ``resultType``, 2026-07-28
    with it."""
    if modern:
        return serialize_server_result("tools/call", MODERN, {"resultType": "complete", **result})
    return serialize_server_result("tools/call", LEGACY, result)


def _delivered(record: TaskRecord) -> bool:
    """Whether the task's result is the client's: a completed task's, or a failed gateway-owned
    task's (a held call's or a refused call's: its refusal or tool error; a quarantined result
    is never delivered)."""
    if record.result is None:
        return False
    return record.status == "completed" or (record.status == "failed" and record.upstream is None)


def _error(record: TaskRecord) -> dict[str, Any]:
    if record.status == "cancelled":
        return {"code": types.INVALID_REQUEST, "message": "Task cancelled"}
    return {"code": types.INTERNAL_ERROR, "message": record.status_message or "Task failed"}
