"""Held calls of an in-process adapter answered as tasks (`gateway.tasks.held`): the call asks
for a task, so a call the policy holds is answered at once, its "pending" result naming the
task (``task_id`` in ``_meta["lockgate/pending"]``); the task then follows the decision (the
approved call runs once, on this gateway) and the adapter reads its outcome from the task."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio

from gateway.approvals.wire import result_from_wire
from gateway.gateway import Gateway
from gateway.tasks.errors import TaskNotFound
from gateway.tasks.held import HeldTasks
from gateway.tasks.record import TaskRecord
from toolsets.context import CallContext, Principal
from toolsets.result import ToolResult
from toolsets.upstream.tasks import TaskAsk

__all__ = ["InProcessTasks", "task_outcome"]

PENDING_META = "lockgate/pending"
Call = Callable[[CallContext], Awaitable[ToolResult]]


class InProcessTasks:
    """Task-augmented calls of one in-process adapter.

    Args:
        gateway: The running gateway (its tasks and approvals).
    """

    def __init__(self, gateway: Gateway) -> None:
        self._tasks = gateway.parts.tasks
        self._held = HeldTasks(self._tasks, gateway.parts.approvals)

    async def call(self, call: Call, ctx: CallContext, name: str) -> ToolResult:
        """``call`` asking for a task; a held call's result names its task."""
        ask = TaskAsk()

        async def reissue(*, task: TaskAsk) -> ToolResult:  # the same call again
            return await call(replace(ctx, task=task))

        ask.reissue = reissue
        result = await call(replace(ctx, task=ask))
        if ask.held is None:
            return result
        record = await self._held.start(
            ask, tool=name, principal=ctx.principal, session_id=ctx.session_id
        )
        meta = dict(result.meta or {})
        meta[PENDING_META] = {**dict(meta.get(PENDING_META) or {}), "task_id": record.id}
        return result.with_meta(meta)

    async def outcome(
        self, task_id: str, principal: Principal, *, timeout: float
    ) -> ToolResult | None:
        """The outcome of task ``task_id`` once it ends; None if it has not within ``timeout``
        seconds (or is gone)."""
        with anyio.move_on_after(timeout):
            try:
                return task_outcome(await self._tasks.ended(task_id, principal))
            except TaskNotFound:
                return None
        return None


def task_outcome(record: TaskRecord) -> ToolResult:
    """What the caller reads of an ended task: its result, or its end as a tool error."""
    held = record.status == "failed" and record.approval_id is not None
    if record.result is not None and (record.status == "completed" or held):
        return result_from_wire(record.result)
    if record.status == "cancelled":
        return ToolResult.error(record.status_message or f"Task {record.id} was cancelled.")
    return ToolResult.error(record.status_message or f"Task {record.id} failed.")
