"""`TaskFollower`: follows one upstream task on this replica until it ends: polls the server's
``tasks/get`` at its suggested interval, writes each status change to the store (so every
replica answers for it), passes on a cancel request that any replica recorded, and, at the end,
fetches the result and hands it to ``complete`` (`TaskService`: the pin check, the result
steps). A task past its ttl is cancelled upstream and no longer followed. A follower resumed
after a restart (or on another replica) first waits for its server to connect."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from gateway.tasks.record import TERMINAL, TaskRecord, TaskStatus
from gateway.tasks.store import TaskStore
from toolsets.errors import UpstreamError
from toolsets.upstream.server import MCPServerToolset
from toolsets.upstream.tasks import UpstreamTask

__all__ = ["PIN_REVIEW", "Complete", "TaskFollower", "pin_refusal"]

log = logging.getLogger("lockgate.tasks")
MIN_POLL: Final = 0.05
MAX_POLL: Final = 2.0
PIN_REVIEW: Final = -32003
"""The JSON-RPC error code of a task whose result waits for the pin review."""
READY_WAIT: Final = 60.0
"""Seconds a resumed follower waits for its server to connect before asking it anyway."""
Changed = Callable[[TaskRecord], Awaitable[None]]
Complete = Callable[[TaskRecord, Mapping[str, Any], "str | None"], Awaitable[TaskRecord]]
"""The task as it ends (or waits for the pin review) with the server's result and message."""


def pin_refusal(tool: str) -> str:
    """What the caller reads while ``tool``'s result is quarantined for the pin review."""
    return (
        f"Tool {tool!r} changed its definition while this task ran: lockgate quarantined the "
        "result for review and delivers it only once an approver accepts the new definition "
        f"(lockgate pins list; lockgate pins accept {tool}); the task waits for that review."
    )


class TaskFollower:
    """Follows one upstream task (see the module docstring).

    Args:
        record: The task as created.
        upstream: The server that runs it.
        store: Where every change is written.
        changed: Told each change (events, status notifications, waiters).
        wake: Set to poll at once (a cancel request on this replica).
        complete: Makes the ended task of the server's result.
        resumed: Following a task another process started: wait for the server first.
    """

    def __init__(
        self,
        record: TaskRecord,
        upstream: MCPServerToolset,
        store: TaskStore,
        changed: Changed,
        wake: anyio.Event,
        *,
        complete: Complete,
        resumed: bool = False,
    ) -> None:
        self.record = record
        self._upstream = upstream
        self._store = store
        self._changed = changed
        self.wake = wake
        self._complete = complete
        self._resumed = resumed
        self._cancel_sent = False

    async def run(self) -> None:
        """Follow the task to its end; every failure to reach the server ends it as failed."""
        upstream_id = self.record.upstream_task_id
        assert upstream_id is not None  # only upstream tasks are followed
        if self._resumed:
            await self._upstream.wait_ready(READY_WAIT)
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
        base = await self._store.get(self.record.id) or self.record
        await self._write(await self._complete(base, result, task.status_message))

    async def _write(self, record: TaskRecord) -> None:
        stored = await self._store.get(record.id)
        if stored is not None and stored.terminal:  # cancelled through the task meanwhile
            self.record = stored
            return
        self.record = record
        await self._store.put(record)
        await self._changed(record)


def _status(value: str) -> TaskStatus:
    return "input_required" if value == "input_required" else "working"
