"""`TaskService`: the gateway's tasks: created from a task-augmented call, found only by the
principal (and tenant) that created them, followed on the replica that created them (see
`TaskFollower`), and answered by any replica from the storage backend."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Self

import anyio
from anyio.abc import TaskGroup

from gateway.events.recorder import Recorder
from gateway.events.task_events import task_completed, task_created, task_status
from gateway.tasks.errors import TaskNotFound
from gateway.tasks.follower import PIN_REVIEW, TaskFollower
from gateway.tasks.record import TaskRecord, TaskStatus, new_task_id
from gateway.tasks.store import TaskStore
from toolsets.context import Principal
from toolsets.upstream.server import MCPServerToolset
from toolsets.upstream.tasks import TaskAsk

__all__ = ["Settler", "StatusListener", "TaskService", "Withdraw"]

log = logging.getLogger("lockgate.tasks")
StatusListener = Callable[[TaskRecord], Awaitable[None]]
Settler = Callable[[TaskRecord], Awaitable[None]]
"""Ends a gateway-owned task (`TaskService.owned`)."""
Withdraw = Callable[[TaskRecord], Awaitable[bool]]
"""Withdraws a cancelled task's held call; False when it was decided already."""
ELSEWHERE_POLL: Final = 0.25
"""Seconds between store reads while waiting for a task another replica follows."""


class TaskService:
    """Gateway tasks (see the module docstring); an async context manager that owns the
    followers of the tasks created here.

    Args:
        store: Where the task records live.
        upstreams: The upstream servers by name.
        recorder: Puts the task events on the audit log and the bus.
    """

    def __init__(
        self, store: TaskStore, upstreams: Mapping[str, MCPServerToolset], recorder: Recorder
    ) -> None:
        self.store = store
        self._upstreams = upstreams
        self._recorder = recorder
        self._listeners: list[StatusListener] = []
        self._wakes: dict[str, anyio.Event] = {}
        self._ended: dict[str, anyio.Event] = {}
        self._tg: TaskGroup | None = None
        self._withdraw: Withdraw | None = None

    @property
    def offered(self) -> bool:
        """Whether the gateway offers tasks (it serves some upstream server's tools)."""
        return bool(self._upstreams)

    def on_status(self, listener: StatusListener) -> None:
        """Tell ``listener`` every change of a task this replica follows or ends."""
        self._listeners.append(listener)

    async def created(
        self, ask: TaskAsk, *, tool: str, principal: Principal, session_id: str | None
    ) -> TaskRecord:
        """Record the task an upstream created for ``ask`` and follow it."""
        upstream = ask.created
        assert upstream is not None
        assert ask.server is not None
        now = time.time()
        record = TaskRecord(
            id=new_task_id(),
            upstream=ask.server,
            upstream_task_id=upstream.task_id,
            principal=principal.id,
            tenant=principal.tenant,
            session_id=session_id,
            tool=tool,
            upstream_tool=ask.upstream_tool,
            status="input_required" if upstream.status == "input_required" else "working",
            status_message=upstream.status_message,
            created_at=now,
            updated_at=now,
            ttl_ms=ask.ttl_ms if ask.ttl_ms is not None else upstream.ttl_ms,
            poll_interval_ms=upstream.poll_interval_ms,
            pin=ask.pin,
        )
        await self.store.put(record)  # durable before the client hears of it
        await self._recorder.record(task_created(record))
        self._follow(record)
        return record

    async def finished(
        self,
        *,
        tool: str,
        principal: Principal,
        session_id: str | None,
        ttl_ms: int | None,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        """A gateway-owned task that ended at once: a call no upstream made a task of (denied,
        answered pending, or a tool without task support), with its ``result`` or ``error``."""
        now = time.time()
        status: TaskStatus = "completed" if error is None else "failed"
        message = str(error.get("message")) if error is not None else None
        record = TaskRecord(
            id=new_task_id(),
            upstream=None,
            upstream_task_id=None,
            principal=principal.id,
            tenant=principal.tenant,
            session_id=session_id,
            tool=tool,
            status=status,
            status_message=message,
            created_at=now,
            updated_at=now,
            ttl_ms=ttl_ms,
            result=result,
            error=error,
        )
        await self.store.put(record)
        await self._recorder.record(task_created(record))
        await self._recorder.record(task_completed(record))
        return record

    async def find(self, task_id: str, principal: Principal) -> TaskRecord:
        """The task ``task_id`` of ``principal``.

        Raises:
            TaskNotFound: no such task, it expired, or another principal (or tenant) made it:
                the same answer for all three.
        """
        record = await self.store.get(task_id) if task_id.startswith("lgt_") else None
        if (
            record is None
            or not record.owned_by(principal.id, principal.tenant)
            or record.expired()
        ):
            raise TaskNotFound(task_id)
        return record

    async def mine(self, principal: Principal) -> list[TaskRecord]:
        """The live tasks of ``principal`` (of its tenant), newest first."""
        records = await self.store.owned(principal.id, principal.tenant)
        return [r for r in records if not r.expired()]

    async def cancel(self, task_id: str, principal: Principal) -> TaskRecord:
        """Ask for ``task_id`` to be cancelled (cooperative; the follower tells the upstream).

        Raises:
            TaskNotFound: as `find`.
        """
        record = await self.find(task_id, principal)
        if record.terminal:
            return record
        if record.upstream is None:  # nothing runs it: cancelled at once
            if record.approval_id is not None and not await self._withdrawn(record):
                return await self.find(task_id, principal)  # decided meanwhile: it runs on
            record = record.moved("cancelled", "Task cancelled")
            await self.store.put(record)
            await self._changed(record)
            return record
        record = record.moved(record.status, record.status_message, cancel_requested=True)
        await self.store.put(record)
        wake = self._wakes.get(task_id)
        if wake is not None:
            wake.set()
        return record

    async def ended(self, task_id: str, principal: Principal) -> TaskRecord:
        """Wait until ``task_id`` ends (2025-11-25's ``tasks/result`` blocks so); the record.

        Raises:
            TaskNotFound: as `find` (also when it expires meanwhile).
        """
        while True:
            record = await self.find(task_id, principal)
            if record.terminal:
                return record
            ended = self._ended.get(task_id)
            with anyio.move_on_after(ELSEWHERE_POLL):  # followed elsewhere: read the store
                await (ended.wait() if ended is not None else anyio.sleep_forever())

    async def owned(self, record: TaskRecord, settle: Settler) -> TaskRecord:
        """Record ``record``, a task the gateway owns that ``settle`` ends (a held call answered
        as a task, `gateway.tasks.held`), and run ``settle`` here until it returns."""
        await self.store.put(record)  # durable before the client hears of it
        await self._recorder.record(task_created(record))
        if self._tg is None:
            log.warning("task %s cannot be settled: the gateway is not running", record.id)
            return record
        self._ended[record.id] = anyio.Event()
        self._tg.start_soon(self._settle, record, settle, name=f"held task {record.id[:12]}")
        return record

    async def update(self, record: TaskRecord) -> None:
        """Write a change of a task this replica settles, and tell its listeners."""
        await self.store.put(record)
        await self._changed(record)

    def on_withdraw(self, withdraw: Withdraw) -> None:
        """Use ``withdraw`` when a held call's task is cancelled (its pending call)."""
        self._withdraw = withdraw

    async def _withdrawn(self, record: TaskRecord) -> bool:
        return self._withdraw is None or await self._withdraw(record)

    async def _settle(self, record: TaskRecord, settle: Settler) -> None:
        try:
            await settle(record)
        except Exception:  # a store outage: the task is left as last written
            log.exception("task %s: settling it failed", record.id)
        finally:
            ended = self._ended.pop(record.id, None)
            if ended is not None:
                ended.set()

    def _follow(self, record: TaskRecord) -> None:
        upstream = self._upstreams.get(record.upstream or "")
        if self._tg is None or upstream is None:
            log.warning("task %s cannot be followed: the gateway is not running", record.id)
            return
        wake = self._wakes[record.id] = anyio.Event()
        self._ended[record.id] = anyio.Event()
        follower = TaskFollower(record, upstream, self.store, self._changed, wake)
        self._tg.start_soon(self._run, follower, name=f"task {record.id[:12]}")

    async def _run(self, follower: TaskFollower) -> None:
        task_id = follower.record.id
        try:
            await follower.run()
        except Exception:  # a store outage: the task is left as last written
            log.exception("task %s: following it failed", task_id)
        finally:
            self._wakes.pop(task_id, None)
            ended = self._ended.pop(task_id, None)
            if ended is not None:
                ended.set()

    async def _changed(self, record: TaskRecord) -> None:
        if record.terminal:
            quarantined = record.error is not None and record.error.get("code") == PIN_REVIEW
            await self._recorder.record(task_completed(record, quarantined=quarantined))
        else:
            await self._recorder.record(task_status(record))
        for listener in list(self._listeners):
            try:
                await listener(record)
            except Exception as exc:  # a gone session must not stop the others
                log.debug("task %s: status not delivered: %r", record.id, exc)

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        await self.store.close()
        return None
