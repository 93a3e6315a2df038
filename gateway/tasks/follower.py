"""`TaskFollower`: follows one upstream task on this replica until it ends: polls the server's
``tasks/get`` at its suggested interval, writes each status change to the store (so every
replica answers for it), passes on a cancel request that any replica recorded, and, at the end,
fetches the result and checks the tool's pin again (a changed definition: the result is
quarantined, the task fails naming the pin review). A task past its ttl is cancelled upstream
and no longer followed."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from gateway.tasks.record import TERMINAL, TaskRecord, TaskStatus
from gateway.tasks.store import TaskStore
from toolsets.errors import UpstreamError
from toolsets.upstream.server import MCPServerToolset
from toolsets.upstream.tasks import UpstreamTask

__all__ = ["PIN_REVIEW", "TaskFollower", "pin_refusal"]

log = logging.getLogger("lockgate.tasks")
MIN_POLL: Final = 0.05
MAX_POLL: Final = 2.0
PIN_REVIEW: Final = -32003
"""The JSON-RPC error code of a task whose result waits for the pin review."""
Changed = Callable[[TaskRecord], Awaitable[None]]


def pin_refusal(tool: str) -> str:
    """What the caller reads when ``tool``'s result is quarantined for the pin review."""
    return (
        f"Tool {tool!r} changed its definition while this task ran: lockgate quarantined the "
        "result for review and does not deliver it. An approver reviews the new definition "
        f"(lockgate pins list; lockgate pins accept {tool}); then call the tool again."
    )


class TaskFollower:
    """Follows one upstream task (see the module docstring).

    Args:
        record: The task as created.
        upstream: The server that runs it.
        store: Where every change is written.
        changed: Told each change (events, status notifications, waiters).
        wake: Set to poll at once (a cancel request on this replica).
    """

    def __init__(
        self,
        record: TaskRecord,
        upstream: MCPServerToolset,
        store: TaskStore,
        changed: Changed,
        wake: anyio.Event,
    ) -> None:
        self.record = record
        self._upstream = upstream
        self._store = store
        self._changed = changed
        self.wake = wake
        self._cancel_sent = False

    async def run(self) -> None:
        """Follow the task to its end; every failure to reach the server ends it as failed."""
        upstream_id = self.record.upstream_task_id
        assert upstream_id is not None  # only upstream tasks are followed
        while not self.record.expired():  # an expired task is gone: it is not followed further
            try:
                task = await self._upstream.tasks.get(upstream_id)
                await self._pass_cancel(upstream_id)
            except (MCPError, UpstreamError, OSError, anyio.BrokenResourceError) as exc:
                await self._fail(f"the server could not be asked about the task: {exc}")
                return
            if task.status in TERMINAL:
                await self._finish(task)
                return
            if (task.status, task.status_message) != (
                self.record.status,
                self.record.status_message,
            ):
                await self._move(_status(task.status), task.status_message)
            await self._pause(task.poll_interval_ms)
        with contextlib.suppress(MCPError, UpstreamError, OSError, anyio.BrokenResourceError):
            await self._upstream.tasks.cancel(upstream_id)  # nobody can read it any more

    async def _pause(self, poll_ms: int | None) -> None:
        seconds = min(MAX_POLL, max(MIN_POLL, (poll_ms or 500) / 1000))
        with anyio.move_on_after(seconds):
            await self.wake.wait()
        self.wake = anyio.Event()

    async def _pass_cancel(self, upstream_id: str) -> None:
        if self._cancel_sent:
            return
        stored = await self._store.get(self.record.id)
        if stored is not None and stored.cancel_requested:
            self._cancel_sent = True
            self.record = stored
            await self._upstream.tasks.cancel(upstream_id)

    async def _move(self, status: TaskStatus, message: str | None, **changes: object) -> None:
        stored = await self._store.get(self.record.id)
        base = stored if stored is not None else self.record
        self.record = base.moved(status, message, **changes)
        await self._store.put(self.record)
        await self._changed(self.record)

    async def _fail(self, why: str, code: int = types.INTERNAL_ERROR, **changes: object) -> None:
        error = {"code": code, "message": why}
        await self._move("failed", why, error=error, **changes)

    async def _finish(self, task: UpstreamTask) -> None:
        if task.status == "cancelled":
            await self._move("cancelled", task.status_message or "Task cancelled")
            return
        if task.status == "failed":
            error = dict(task.error or {"code": types.INTERNAL_ERROR, "message": "Task failed"})
            await self._move("failed", task.status_message, error=error)
            return
        try:
            result = await self._upstream.tasks.result(self.record.upstream_task_id or "")
        except MCPError as exc:
            error = exc.error.model_dump(mode="json", exclude_none=True)
            await self._move("failed", exc.error.message, error=error)
            return
        except (UpstreamError, OSError, anyio.BrokenResourceError) as exc:
            await self._fail(f"the server could not be asked for the result: {exc}")
            return
        if not self._pin_holds():
            tool = self.record.tool
            log.warning("task %s: %s changed its definition; quarantined", self.record.id, tool)
            await self._fail(pin_refusal(tool), PIN_REVIEW, result=result)
            return
        await self._move("completed", task.status_message, result=result)

    def _pin_holds(self) -> bool:
        name = self.record.upstream_tool
        current = self._upstream.tools.get(name) if name is not None else None
        return current is not None and current.pin == self.record.pin


def _status(value: str) -> TaskStatus:
    return "input_required" if value == "input_required" else "working"
