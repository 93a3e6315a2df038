"""Held calls of a remote adapter answered as tasks: `RemoteGateway(..., as_task=True)` calls
tools task-augmented when the gateway advertises tasks (2025-11-25's ``tasks`` capability, or
2026-07-28's ``io.modelcontextprotocol/tasks`` extension), so a held call comes back at once as a
task (`gateway.tasks.held`) instead of a request held open: it is answered "pending" naming the
task (``task_id`` in ``_meta["lockgate/pending"]``, as in process), and the host reads the task's
outcome on resume by polling ``tasks/get`` (and 2025-11-25's ``tasks/result``). A call that
comes back as any other task (an upstream's, or one that ended at once) is followed to its end
here, so the caller sees its result as for a plain call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets._sdk_compat import unchecked_request
from toolsets.errors import UpstreamError
from toolsets.result import ToolResult
from toolsets.upstream.tasks import TASKS_EXTENSION

__all__ = ["RemoteTasks", "tasks_offered"]

PENDING_META: Final = "lockgate/pending"
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
POLL_BOUNDS: Final = (0.05, 2.0)
"""Seconds between two ``tasks/get`` polls: the task's suggestion, kept within these."""


def tasks_offered(client: Client) -> bool:
    """Whether the gateway behind ``client`` takes task-augmented ``tools/call``."""
    capabilities = client.server_capabilities
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return TASKS_EXTENSION in (capabilities.extensions or {})
    tasks = capabilities.tasks
    return tasks is not None and tasks.requests is not None and tasks.requests.tools is not None


def _modern(client: Client) -> bool:
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


class RemoteTasks:
    """Task-augmented calls and task outcomes over one `RemoteGateway`'s MCP session.

    Args:
        timeout: Seconds a call that came back as a task (not a held one) is followed before
            it is answered as still running.
    """

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout

    async def call(
        self, client: Client, name: str, args: Mapping[str, Any], meta: Mapping[str, Any] | None
    ) -> ToolResult:
        """Call ``name`` asking for a task; a held call's "pending" result names its task.

        Raises:
            MCPError: the gateway answered with an error (an unknown tool, say).
            UpstreamError: the gateway answered with neither a task nor a result.
        """
        params: dict[str, Any] = {"name": name, "arguments": dict(args)}
        if meta:
            params["_meta"] = dict(meta)
        if not _modern(client):
            params["task"] = {}
        raw = await unchecked_request(
            client.session, "tools/call", params, extension=TASKS_EXTENSION
        )
        nested = raw.get("task")
        task: dict[str, Any] = nested if isinstance(nested, dict) else raw
        if not isinstance(task.get("taskId"), str):  # no task was made: the plain result
            return _result(raw)
        pending = (raw.get("_meta") or {}).get(PENDING_META)
        if isinstance(pending, dict) and "id" in pending:
            return _held(task, str(pending["id"]))
        outcome = await self.outcome(client, task["taskId"], timeout=self._timeout)
        if outcome is None:
            waited = f"Task {task['taskId']} has not ended within {self._timeout:g} s."
            return ToolResult.error(waited)
        return outcome

    async def outcome(self, client: Client, task_id: str, *, timeout: float) -> ToolResult | None:
        """What the caller reads of task ``task_id`` once it ends (its result, or its end as an
        error result); None when it has not ended within ``timeout`` seconds or is gone."""
        with anyio.move_on_after(timeout):
            try:
                ended = await _until_ended(client, task_id)
                if _modern(client):
                    return _inlined(ended)
                return _result(await _request(client, "tasks/result", task_id))
            except MCPError as exc:
                if "not found" in exc.error.message.lower():
                    return None
                return ToolResult.error(exc.error.message)
        return None


async def _until_ended(client: Client, task_id: str) -> dict[str, Any]:
    low, high = POLL_BOUNDS
    while True:
        task = await _request(client, "tasks/get", task_id)
        if task.get("status") in TERMINAL:
            return task
        interval = task.get("pollIntervalMs", task.get("pollInterval")) or 500
        await anyio.sleep(min(max(interval / 1000, low), high))


async def _request(client: Client, method: str, task_id: str) -> dict[str, Any]:
    """``tasks/get`` or ``tasks/result`` of ``task_id``: the raw result."""
    params = {"taskId": task_id}
    return await unchecked_request(client.session, method, params, extension=TASKS_EXTENSION)


def _held(task: Mapping[str, Any], approval_id: str) -> ToolResult:
    kind = "approval" if task.get("status") == "input_required" else "external"
    pending = {"id": approval_id, "kind": kind, "state": "pending", "task_id": task["taskId"]}
    message = str(task.get("statusMessage") or f"Held: {kind} {approval_id}.")
    return ToolResult.text(message, meta={PENDING_META: pending})


def _inlined(task: Mapping[str, Any]) -> ToolResult:
    """A 2026-07-28 ended task's outcome (``tasks/get`` inlines it)."""
    if isinstance(task.get("result"), dict):
        return _result(task["result"])
    error = task.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    message = message or task.get("statusMessage")
    return ToolResult.error(str(message or f"Task {task['taskId']} failed."))


def _result(raw: Mapping[str, Any]) -> ToolResult:
    wire = {k: v for k, v in raw.items() if k != "resultType"}
    if "content" not in wire:
        keys = ", ".join(sorted(raw))
        raise UpstreamError(f"the gateway answered with neither a task nor a result ({keys})")
    return ToolResult.from_wire(wire)
