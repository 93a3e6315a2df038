"""The MCP face of gateway tasks: a task-augmented ``tools/call`` (server middleware, so the
SDK's ``CallToolResult`` check never sees the ``CreateTaskResult``), ``tasks/get``,
``tasks/result``, ``tasks/cancel``, ``tasks/list``, and status notifications to the task's owner:
the 2025-11-25 session that created it, or a 2026-07-28 ``subscriptions/listen`` stream of the
same principal naming it (`gateway.mcp.task_listen`). 2026-07-28's ``tasks/update`` is relayed
to the server running the task, under the same ownership check, and ``tasks/get`` of a task that
waits for input carries the server's ``inputRequests`` (those of the requests its config relays,
``client_requests``). 2025-11-25 has no ``tasks/update``: an input-required task's requests come
over ``tasks/result`` there, which the gateway does not relay.

A call asks for a task with ``params.task`` (2025-11-25) or by declaring the
``io.modelcontextprotocol/tasks`` extension in its request's client capabilities (2026-07-28:
the tool's server decides whether to make one). The policy decides first, in
the call chain; only an upstream call creates an upstream task (`toolsets.upstream.tasks`). A
2025-11-25 call no upstream made a task of (denied, answered pending, a tool without task
support) is answered with a gateway-owned task that has already ended with that outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, SERVER_INFO_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.mcp.task_listen import TaskListen
from gateway.tasks.errors import TaskNotFound
from gateway.tasks.held import HeldTasks
from gateway.tasks.record import TaskRecord
from gateway.tasks.service import TaskService
from gateway.tasks.wire import (
    NOT_FOUND,
    created_result,
    detailed_task,
    payload,
    status_notification,
    task_fields,
)
from toolsets.errors import LockgateError
from toolsets.upstream.tasks import TASKS_EXTENSION, TaskAsk

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from gateway.mcp.server import Downstream

__all__ = ["TaskHandlers", "UpdateTaskParams"]

log = logging.getLogger("lockgate.tasks")

Ctx = ServerRequestContext[Any]


def _modern(ctx: Ctx) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _declares_tasks(meta: Mapping[str, Any] | None) -> bool:
    declared = (meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


class UpdateTaskParams(types.RequestParams):
    """2026-07-28's ``tasks/update`` params (the Tasks extension; no SDK type)."""

    task_id: str
    input_responses: dict[str, Any]


_RELAYED = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling"}
_RELAYED["roots/list"] = "roots"


def _not_found() -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=NOT_FOUND)


class TaskHandlers:
    """The ``tasks/*`` handlers and the task-augmented ``tools/call`` of one downstream server.

    Args:
        downstream: The server's handlers (who is calling; the call itself).
        service: The gateway's tasks.
        stamp: The server's ``serverInfo`` stamp, for 2026-07-28 results answered here.
    """

    def __init__(
        self, downstream: Downstream, service: TaskService, stamp: Callable[[], dict[str, Any]]
    ) -> None:
        self.downstream = downstream
        self.service = service
        self._stamp = stamp
        self.held = HeldTasks(service, downstream.gateway.parts.approvals)
        self.listen = TaskListen(
            service,
            lambda ctx: downstream.context(ctx).principal,
            lambda: downstream.gateway.parts.events.stream,
        )
        service.on_status(self.notify)

    def register(self, server: Server[Any]) -> None:
        """Serve the ``tasks/*`` methods on ``server`` and take its task-augmented calls."""
        if not self.service.offered:
            return
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, self.get)
        server.add_request_handler("tasks/result", types.GetTaskPayloadRequestParams, self.result)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, self.cancel)
        server.add_request_handler("tasks/list", types.PaginatedRequestParams, self.list)
        server.add_request_handler("tasks/update", UpdateTaskParams, self.update)
        server.middleware.append(self.intercept)
        server.middleware.append(self.listen.intercept)

    async def intercept(self, ctx: Ctx, call_next: Any) -> Any:
        """Server middleware: a ``tools/call`` that asks for a task is answered here."""
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping):
            return await call_next(ctx)
        ttl = await self._wanted(ctx, params)
        if ttl is False:
            return await call_next(ctx)
        call = types.CallToolRequestParams.model_validate(params, by_name=False)
        ask = TaskAsk(ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None)
        outcome: Any = None
        error: dict[str, Any] | None = None
        try:
            outcome = await self.downstream.call_tool(ctx, call, task=ask)
        except MCPError as exc:
            if _modern(ctx):
                raise
            error = exc.error.model_dump(mode="json", exclude_none=True)
        context = self.downstream.context(ctx)
        principal, session_id = context.principal, context.session_id
        if ask.held is not None:  # a held call answered as a task (gateway.tasks.held)
            record = await self.held.start(
                ask, tool=call.name, principal=principal, session_id=session_id
            )
        elif ask.created is not None:
            record = await self.service.created(
                ask, tool=call.name, principal=principal, session_id=session_id
            )
        elif _modern(ctx):  # no task was made: the plain outcome
            wire = outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
            return self._stamped({"resultType": "complete", **wire})
        else:
            result = None
            if isinstance(outcome, types.CallToolResult):
                result = outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
            record = await self.service.finished(
                tool=call.name,
                principal=principal,
                session_id=session_id,
                ttl_ms=ask.ttl_ms,
                result=result,
                error=error,
            )
        return self._stamped(created_result(record, modern=_modern(ctx)), modern=_modern(ctx))

    async def _wanted(self, ctx: Ctx, params: Mapping[str, Any]) -> int | bool | None:
        """The ttl (or None) of the task the call asks for; False when it asks for none."""
        if not _modern(ctx):
            task = params.get("task")
            return task.get("ttl") if isinstance(task, dict) else False
        # 2026-07-28 lists no task support: each upstream decides per call whether to make one.
        return None if _declares_tasks(ctx.meta) else False

    def _stamped(self, result: dict[str, Any], *, modern: bool = True) -> dict[str, Any]:
        if modern:
            result["_meta"] = {**(result.get("_meta") or {}), SERVER_INFO_META_KEY: self._stamp()}
        return result

    async def _find(self, ctx: Ctx, task_id: str) -> TaskRecord:
        try:
            return await self.service.find(task_id, self.downstream.context(ctx).principal)
        except TaskNotFound:
            raise _not_found() from None

    async def get(self, ctx: Ctx, params: types.GetTaskRequestParams) -> dict[str, Any]:
        """``tasks/get``: the task (2026-07-28: its result or error inlined, or the server's
        input requests of a task waiting for input)."""
        record = await self._find(ctx, params.task_id)
        asked = None
        if _modern(ctx) and record.status == "input_required":
            asked = await self._input_requests(record)
        return detailed_task(record, modern=_modern(ctx), input_requests=asked)

    async def _input_requests(self, record: TaskRecord) -> dict[str, Any]:
        """The input requests the server asks of ``record``'s client, of the kinds its config
        relays (none for a task the gateway owns)."""
        upstream = self.downstream.gateway.parts.upstreams.get(record.upstream or "")
        if upstream is None or record.upstream_task_id is None:
            return {}
        try:
            asked = (await upstream.tasks.get(record.upstream_task_id)).input_requests or {}
        except Exception as exc:  # shown as the status the store has: the client polls again
            log.debug("task %s: input requests not read: %r", record.id, exc)
            return {}
        allowed = upstream.requests.allowed
        return {
            key: request
            for key, request in asked.items()
            if isinstance(request, dict) and _RELAYED.get(request.get("method", "")) in allowed
        }

    async def update(self, ctx: Ctx, params: UpdateTaskParams) -> dict[str, Any]:
        """``tasks/update`` (2026-07-28): answers to a task's input requests, relayed to the
        server running it."""
        if not _modern(ctx):
            raise MCPError(code=types.METHOD_NOT_FOUND, message="Method not found")
        record = await self._find(ctx, params.task_id)
        upstream = self.downstream.gateway.parts.upstreams.get(record.upstream or "")
        if record.approval_id is not None or upstream is None or not record.upstream_task_id:
            message = (
                f"Task {record.id} waits for an approver's decision, not for input: "
                "the approvers decide on the approvals page, the CLI or the REST API."
            )
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        if record.status != "input_required":
            message = f"Task {record.id} is not waiting for input (status '{record.status}')."
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        try:
            await upstream.tasks.update(record.upstream_task_id, params.input_responses)
        except LockgateError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return self._stamped({"resultType": "complete"})

    async def result(self, ctx: Ctx, params: types.GetTaskPayloadRequestParams) -> dict[str, Any]:
        """``tasks/result`` (2025-11-25): waits for the end; the ``CallToolResult``."""
        principal = self.downstream.context(ctx).principal
        try:
            record = await self.service.ended(params.task_id, principal)
        except TaskNotFound:
            raise _not_found() from None
        return payload(record)

    async def cancel(self, ctx: Ctx, params: types.CancelTaskRequestParams) -> dict[str, Any]:
        """``tasks/cancel``: asks the task's server to stop it (a finished task is refused)."""
        record = await self._find(ctx, params.task_id)
        if record.terminal:
            message = f"Cannot cancel task: already in terminal status '{record.status}'"
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        principal = self.downstream.context(ctx).principal
        record = await self.service.cancel(params.task_id, principal)
        return {} if _modern(ctx) else task_fields(record, modern=False)

    async def list(self, ctx: Ctx, params: types.PaginatedRequestParams) -> dict[str, Any]:
        """``tasks/list`` (2025-11-25): the caller's own tasks only."""
        records = await self.service.mine(self.downstream.context(ctx).principal)
        return {"tasks": [task_fields(r, modern=_modern(ctx)) for r in records]}

    async def notify(self, record: TaskRecord) -> None:
        """Tell ``record``'s new status to the 2026-07-28 listen streams naming it and the
        2025-11-25 session that created it."""
        await self.listen.notify(record)
        if record.session_id is None:
            return
        connection = self.downstream.by_session.get(record.session_id)
        if connection is not None:
            method, params = status_notification(record)
            await connection.notify(method, params)
