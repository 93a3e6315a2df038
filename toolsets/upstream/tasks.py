"""Tasks on an upstream server, in either era: a task-augmented ``tools/call`` (2025-11-25's
``params.task``, or 2026-07-28's ``io.modelcontextprotocol/tasks`` extension declared in the
request's client capabilities) and ``tasks/get``, ``tasks/result``, ``tasks/cancel``, and
2026-07-28's ``tasks/update`` (answers to an ``input_required`` task's input requests).

`TaskAsk` travels down the call chain in `CallContext.task`: the gateway's task layer asks the
upstream for a task, and the upstream call fills in the task the server created. Requests go
down a stdio server's pipe as raw JSON-RPC; to an HTTP server, the task-augmented call goes
through `toolsets._sdk_compat.unchecked_request` (the SDK checks a ``tools/call`` result against
``CallToolResult`` and would refuse a ``CreateTaskResult``) and ``tasks/*`` through the SDK
session, whose result checks do not cover them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict

from toolsets._sdk_compat import unchecked_request
from toolsets.decision import Decision
from toolsets.errors import UpstreamError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.catalogue import UpstreamCatalogue
from toolsets.upstream.connection import UpstreamConnection

__all__ = [
    "TASKS_EXTENSION",
    "HeldTask",
    "Reissue",
    "TaskAsk",
    "UpstreamTask",
    "UpstreamTasks",
    "parse_task",
    "task_support",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 Tasks extension's identifier."""
_STATUSES: Final = frozenset({"working", "input_required", "completed", "failed", "cancelled"})


class _Raw(BaseModel):
    """Any JSON object, kept whole (a ``tasks/*`` result)."""

    model_config = ConfigDict(extra="allow")


def task_support(tool: ToolDef) -> str:
    """The tool's ``execution.taskSupport``: ``forbidden`` (also when absent), ``optional`` or
    ``required``."""
    value = (tool.execution or {}).get("taskSupport")
    return value if value in ("optional", "required") else "forbidden"


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamTask:
    """A task as the upstream reported it (either era), its id the server's own."""

    task_id: str
    status: str
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    input_requests: Mapping[str, Any] | None = None
    """2026-07-28: what an ``input_required`` task asks of the client, by key."""


def parse_task(raw: Mapping[str, Any]) -> UpstreamTask:
    """The task in a ``CreateTaskResult`` (2025-11-25 nests it in ``task``) or a ``tasks/get``
    result (either era).

    Raises:
        ValueError: ``raw`` holds no task.
    """
    nested = raw.get("task")
    body: Mapping[str, Any] = nested if isinstance(nested, dict) else raw
    task_id, status = body.get("taskId"), body.get("status")
    if not isinstance(task_id, str) or status not in _STATUSES:
        raise ValueError("no task (taskId and status) in the server's answer")
    ttl = body.get("ttlMs", body.get("ttl"))
    poll = body.get("pollIntervalMs", body.get("pollInterval"))
    message = body.get("statusMessage")
    return UpstreamTask(
        task_id=task_id,
        status=status,
        status_message=message if isinstance(message, str) else None,
        ttl_ms=ttl if isinstance(ttl, int) else None,
        poll_interval_ms=poll if isinstance(poll, int) else None,
        result=body.get("result") if isinstance(body.get("result"), dict) else None,
        error=body.get("error") if isinstance(body.get("error"), dict) else None,
        input_requests=_mapping(body.get("inputRequests")),
    )


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldTask:
    """A call the approval gate opened a pending call for and answered at once, to be answered
    as a task (`approval.as_task`).

    Attributes:
        approval_id: The pending call's id.
        kind: ``approval`` (an approver decides) or ``external`` (a worker answers).
        approvers: Who may decide (empty: any approver).
    """

    approval_id: str
    kind: str
    approvers: tuple[str, ...] = ()


class Reissue(Protocol):
    """A held call made again, asking for ``task`` (an upstream whose tool supports tasks makes
    one: `gateway.tasks.held` follows it)."""

    async def __call__(self, *, task: TaskAsk) -> Any: ...


class TaskAsk:
    """A caller's wish for a task, handed down the call chain (`CallContext.task`).

    The upstream call that honours it sets `created` (the server's task), `server`, and `pin`
    (of the tool's definition as the server listed it then); nothing is set when no upstream
    created a task (a denied call, a tool without task support). The approval gate sets `held`
    when it answers a held call as a task; the face sets `reissue` (the same call again, with a
    fresh ask: how the approved call is claimed and run). The upstream call also notes the call's
    `call_id`, policy `decision` and `args` (the task's result event carries the first two and
    masks what the decision redacts of the last).
    """

    __slots__ = (
        "args",
        "call_id",
        "created",
        "decision",
        "held",
        "pin",
        "reissue",
        "server",
        "ttl_ms",
        "upstream_tool",
    )

    def __init__(self, ttl_ms: int | None = None) -> None:
        self.ttl_ms = ttl_ms
        self.args: Mapping[str, Any] | None = None
        self.call_id: str | None = None
        self.decision: Decision | None = None
        self.created: UpstreamTask | None = None
        self.server: str | None = None
        self.upstream_tool: str | None = None
        self.pin: str | None = None
        self.held: HeldTask | None = None
        self.reissue: Reissue | None = None


class UpstreamTasks:
    """Task requests to one upstream server over its current session."""

    def __init__(self, connection: UpstreamConnection, catalogue: UpstreamCatalogue) -> None:
        self._connection = connection
        self._catalogue = catalogue

    @property
    def modern(self) -> bool:
        """Whether the current session speaks 2026-07-28."""
        return self._connection.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def create(self, tool: ToolDef, args: Mapping[str, Any], ask: TaskAsk) -> ToolResult:
        """Call ``tool`` task-augmented; the server's task goes to ``ask`` (a server that
        answered with a plain result created none: that result is returned).

        Raises:
            MCPError: the server answered with an error.
            UpstreamError: the server is down or sent no task.
        """
        params: dict[str, Any] = {"name": tool.upstream_name, "arguments": dict(args)}
        if self.modern:
            params["_meta"] = {CLIENT_CAPABILITIES_META_KEY: self._capabilities()}
        else:
            params["task"] = {"ttl": ask.ttl_ms} if ask.ttl_ms is not None else {}
        raw = await self._request("tools/call", params, raw_call=True)
        if "content" in raw and raw.get("resultType") in (None, "complete"):
            return ToolResult.from_wire(raw)
        try:
            ask.created = parse_task(raw)
        except ValueError as exc:
            name = self._connection.name
            message = f"Server {name!r} answered a task call: {exc}"
            raise UpstreamError(message, server=name) from None
        ask.server, ask.upstream_tool = self._connection.name, tool.upstream_name
        current = self._catalogue.tools.get(tool.upstream_name)
        ask.pin = current.pin if current is not None else tool.pin
        note = f"Task created on server {self._connection.name!r}."
        return ToolResult(content=[types.TextContent(type="text", text=note)])

    async def get(self, task_id: str) -> UpstreamTask:
        """The server's ``tasks/get`` answer.

        Raises:
            MCPError: the server answered with an error.
            UpstreamError: the server is down, or answered without a task.
        """
        raw = await self._request("tasks/get", {"taskId": task_id})
        try:
            return parse_task(raw)
        except ValueError as exc:
            name = self._connection.name
            raise UpstreamError(f"Server {name!r} answered tasks/get: {exc}", server=name) from None

    async def result(self, task_id: str) -> dict[str, Any]:
        """The finished task's ``CallToolResult`` (2025-11-25: ``tasks/result``; 2026-07-28:
        the ``result`` that ``tasks/get`` carries).

        Raises:
            MCPError: the server answered with an error (the task's own, for a failed task).
            UpstreamError: the server is down.
        """
        if self.modern:
            task = await self.get(task_id)
            if task.error is not None:
                raise MCPError.from_error_data(types.ErrorData.model_validate(task.error))
            return dict(task.result or {"content": []})
        raw = await self._request("tasks/result", {"taskId": task_id})
        raw.pop("_meta", None)
        return raw

    async def cancel(self, task_id: str) -> None:
        """Ask the server to cancel its task (cooperative: it may finish anyway).

        Raises:
            MCPError: the server answered with an error.
            UpstreamError: the server is down.
        """
        await self._request("tasks/cancel", {"taskId": task_id})

    async def update(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        """2026-07-28's ``tasks/update``: answers to the task's input requests, by key.

        Raises:
            MCPError: the server answered with an error.
            UpstreamError: the server is down.
        """
        params = {"taskId": task_id, "inputResponses": dict(input_responses)}
        await self._request("tasks/update", params, raw_call=True)

    def _capabilities(self) -> dict[str, Any]:
        pipe = self._connection.pipe
        envelope = (pipe.envelope or {}) if pipe is not None else {}
        declared = dict(envelope.get(CLIENT_CAPABILITIES_META_KEY) or {})
        declared["extensions"] = {**(declared.get("extensions") or {}), TASKS_EXTENSION: {}}
        return declared

    async def _request(
        self, method: str, params: dict[str, Any], *, raw_call: bool = False
    ) -> dict[str, Any]:
        connection = self._connection
        name, client, pipe = connection.name, connection.client, connection.pipe
        if client is None:
            message = f"Server {name!r} is unavailable ({connection.status})."
            raise UpstreamError(message, server=name)
        if pipe is not None:
            return await pipe.request(method, params)
        if raw_call:  # the SDK would refuse a CreateTaskResult (`unchecked_request`)
            params.pop("_meta", None)  # the session's envelope, with the extension declared
            return await unchecked_request(
                client.session, method, params, extension=TASKS_EXTENSION
            )
        request = _TASK_REQUESTS[method].model_validate({"params": params})
        answer = await client.session.send_request(request, _Raw)
        return dict(answer.model_extra or {})


_TASK_REQUESTS: Final[Mapping[str, type[types.Request[Any, Any]]]] = {
    "tasks/get": types.GetTaskRequest,
    "tasks/result": types.GetTaskPayloadRequest,
    "tasks/cancel": types.CancelTaskRequest,
}
