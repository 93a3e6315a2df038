"""`TaskService`: the gateway's tasks: created from a task-augmented call, found only by the
principal (and tenant) that created them, followed on the replica that created them (see
`TaskFollower`) under a lease, resumed by another replica (or the restarted gateway) when that
lease lapses (`TaskLeases`), and answered by any replica from the storage backend; each change
is told by `TaskAnnouncer`."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Final, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from gateway.events.recorder import Recorder
from gateway.events.redact import values_at
from gateway.events.task_events import task_completed, task_created
from gateway.tasks.announce import StatusListener, TaskAnnouncer
from gateway.tasks.errors import TaskNotFound
from gateway.tasks.follower import TaskFollower
from gateway.tasks.leases import LEASE, SCAN, TaskLeases
from gateway.tasks.record import TaskRecord, TaskStatus, new_task_id
from gateway.tasks.results import decision_of
from gateway.tasks.review import TaskReview
from gateway.tasks.store import TaskStore
from toolsets.context import Principal
from toolsets.upstream.server import MCPServerToolset
from toolsets.upstream.tasks import TaskAsk

__all__ = ["Settler", "StatusListener", "TaskService", "Withdraw"]

log = logging.getLogger("lockgate.tasks")
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
        review: Ends finished upstream tasks (the pin check, the result steps).
        lease: Seconds a lease on a followed task holds (`TaskLeases`).
        scan: Seconds between lease renewals and scans for orphaned tasks.
    """

    def __init__(
        self,
        store: TaskStore,
        upstreams: Mapping[str, MCPServerToolset],
        recorder: Recorder,
        *,
        review: TaskReview | None = None,
        lease: float = LEASE,
        scan: float = SCAN,
    ) -> None:
        self.store = store
        self._upstreams = upstreams
        self._review = review or TaskReview()
        self._announce = TaskAnnouncer(recorder, self._review)
        self.leases = TaskLeases(store, secrets.token_hex(8), lease=lease, scan=scan)
        self._wakes: dict[str, anyio.Event] = {}
        self._ended: dict[str, anyio.Event] = {}
        self._tg: TaskGroup | None = None
        self._withdraw: Withdraw | None = None
        self._resume_held: Settler | None = None
        self._pins_changed = anyio.Event()

    @property
    def offered(self) -> bool:
        """Whether the gateway offers tasks (it serves some upstream server's tools)."""
        return bool(self._upstreams)

    def on_status(self, listener: StatusListener) -> None:
        """Tell ``listener`` every change of a task this replica follows or ends."""
        self._announce.on_status(listener)

    async def created(
        self, ask: TaskAsk, *, tool: str, principal: Principal, session_id: str | None
    ) -> TaskRecord:
        """Record the task an upstream created for ``ask`` and follow it."""
        upstream = ask.created
        assert upstream is not None
        now = time.time()
        record = TaskRecord(
            id=new_task_id(),
            principal=principal.id,
            tenant=principal.tenant,
            session_id=session_id,
            tool=tool,
            status_message=upstream.status_message,
            created_at=now,
            updated_at=now,
            ttl_ms=ask.ttl_ms if ask.ttl_ms is not None else upstream.ttl_ms,
            **_upstream_task(ask),
        )
        record = self.leases.stamp(record)
        await self.store.put(record)  # durable before the client hears of it
        await self._announce.record(task_created, record)
        self._follow(record)
        return record

    async def adopt(self, record: TaskRecord, ask: TaskAsk) -> None:
        """Follow here, to its end, the upstream task ``ask`` created for ``record``: a held
        call's task whose approved call ran task-augmented (`gateway.tasks.held`), run where
        ``record`` is settled. From now on it is that upstream task's: its status, its result
        through the result steps (the call's one ``tool.result``), a cancel passed to the
        server, another replica following it if this one stops."""
        assert ask.created is not None
        base = await self.store.get(record.id) or record
        message = ask.created.status_message or base.status_message
        fields = _upstream_task(ask)
        record = base.moved(fields.pop("status"), message, **fields)
        await self.update(record)
        upstream = self._upstreams.get(record.upstream or "")
        if upstream is None:
            await self._unfollowable(record)
            return
        wake = self._wakes[record.id] = anyio.Event()
        changed, complete = self._announce.changed, self._review.complete
        follower = TaskFollower(record, upstream, self.store, changed, wake, complete=complete)
        await self._run(follower)

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
        answered pending, or a tool without task support), with its ``result`` or ``error``:
        ``failed`` for an error or a result with ``isError`` (a refusal), as the spec ends a
        task whose tool result is an error."""
        now = time.time()
        status: TaskStatus = "completed"
        message = None
        if error is not None:
            status, message = "failed", str(error.get("message"))
        elif result is not None and result.get("isError"):
            status, message = "failed", _text(result)
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
        await self._announce.record(task_created, record)
        await self._announce.record(task_completed, record)
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
        if record.quarantined:  # it ran already: its withheld result is discarded
            record = record.moved("cancelled", "Task cancelled", result=None, error=None)
            await self.update(record)
            return record
        if record.upstream is None:  # nothing runs it: cancelled at once
            if record.approval_id is not None and not await self._withdrawn(record):
                return await self.find(task_id, principal)  # decided meanwhile: it runs on
            record = record.moved("cancelled", "Task cancelled")
            await self.store.put(record)
            await self._announce.changed(record)
            return record
        record = record.moved(record.status, record.status_message, cancel_requested=True)
        await self.store.put(record)
        wake = self._wakes.get(task_id)
        if wake is not None:
            wake.set()
        return record

    async def ended(self, task_id: str, principal: Principal) -> TaskRecord:
        """Wait until ``task_id`` ends (2025-11-25's ``tasks/result`` blocks so), or its result
        waits for the pin review; the record.

        Raises:
            TaskNotFound: as `find` (also when it expires meanwhile).
        """
        while True:
            record = await self.find(task_id, principal)
            if record.terminal or record.quarantined:
                return record
            ended = self._ended.get(task_id)
            with anyio.move_on_after(ELSEWHERE_POLL):  # followed elsewhere: read the store
                await (ended.wait() if ended is not None else anyio.sleep_forever())

    async def owned(self, record: TaskRecord, settle: Settler) -> TaskRecord:
        """Record ``record``, a task the gateway owns that ``settle`` ends (a held call answered
        as a task, `gateway.tasks.held`), and run ``settle`` here until it returns."""
        record = self.leases.stamp(record)
        await self.store.put(record)  # durable before the client hears of it
        await self._announce.record(task_created, record)
        self._start(record.id, settle, record)
        return record

    def on_resume(self, settle: Settler) -> None:
        """Use ``settle`` for a held call's task whose replica stopped before it ended."""
        self._resume_held = settle

    async def pins_changed(self, source: str = "") -> None:
        """A catalogue changed (a definition accepted, here or elsewhere): results waiting for
        the pin review are looked at again."""
        changed, self._pins_changed = self._pins_changed, anyio.Event()
        changed.set()

    async def update(self, record: TaskRecord) -> None:
        """Write a change of a task this replica settles, and tell its listeners."""
        await self.store.put(record)
        await self._announce.changed(record)

    def on_withdraw(self, withdraw: Withdraw) -> None:
        """Use ``withdraw`` when a held call's task is cancelled (its pending call)."""
        self._withdraw = withdraw

    async def _withdrawn(self, record: TaskRecord) -> bool:
        return self._withdraw is None or await self._withdraw(record)

    def _start(self, task_id: str, run: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``run(*args)`` for ``task_id`` in the service's task group (followed here)."""
        if self._tg is None:
            log.warning("task %s cannot be followed: the gateway is not running", task_id)
            return
        self._ended[task_id] = anyio.Event()
        self._tg.start_soon(self._owning, task_id, run, *args, name=f"task {task_id[:12]}")

    async def _owning(self, task_id: str, run: Callable[..., Awaitable[None]], *args: Any) -> None:
        try:
            await run(*args)
        except Exception:  # a store outage: the task is left as last written
            log.exception("task %s: following it failed", task_id)
        finally:
            self._wakes.pop(task_id, None)
            ended = self._ended.pop(task_id, None)
            if ended is not None:
                ended.set()

    def _follow(self, record: TaskRecord, *, resumed: bool = False) -> None:
        upstream = self._upstreams.get(record.upstream or "")
        if upstream is None:  # a resumed task of a server no longer configured here
            self._start(record.id, self._unfollowable, record)
            return
        wake = self._wakes[record.id] = anyio.Event()
        changed, complete = self._announce.changed, self._review.complete
        follower = TaskFollower(
            record, upstream, self.store, changed, wake, complete=complete, resumed=resumed
        )
        self._start(record.id, self._run, follower)

    async def _unfollowable(self, record: TaskRecord) -> None:
        why = f"Server {record.upstream!r} is not configured on this gateway; task not followed."
        error = {"code": types.INTERNAL_ERROR, "message": why}
        await self._write_end(record.moved("failed", why, error=error))

    async def _run(self, follower: TaskFollower) -> None:
        await follower.run()
        if follower.record.quarantined:
            await self._await_review(follower.record.id)

    async def _await_review(self, task_id: str) -> None:
        """Wait for the pin review of a quarantined result, then end the task."""
        while True:
            signal = self._pins_changed
            record = await self.store.get(task_id)
            if record is None or not record.quarantined or record.expired():
                return
            ended = await self._review.settle(record)
            if ended is not None:
                await self._write_end(ended)
                return
            with anyio.move_on_after(self.leases.scan):  # also sees a cancel made elsewhere
                await signal.wait()

    async def _write_end(self, record: TaskRecord) -> None:
        stored = await self.store.get(record.id)
        if stored is not None and stored.terminal:  # cancelled meanwhile
            return
        await self.update(record)

    def _resume(self, record: TaskRecord) -> None:
        """Follow ``record``, an unfinished task whose replica stopped, here."""
        if record.quarantined:
            self._start(record.id, self._await_review, record.id)
        elif record.upstream is not None:  # a held call's task too, once its upstream's
            self._follow(record, resumed=True)
        elif record.approval_id is not None and self._resume_held is not None:
            self._start(record.id, self._resume_held, record)

    async def __aenter__(self) -> Self:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self.leases.keep, self._ended.keys, self._resume, name="task leases")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        tg, self._tg = self._tg, None
        followed = list(self._ended)
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            await self.leases.release(followed)  # another replica (or the next start) resumes
        await self.store.close()
        return None


def _upstream_task(ask: TaskAsk) -> dict[str, Any]:
    """The fields of a task record that name the upstream task ``ask`` created and its call."""
    upstream = ask.created
    assert upstream is not None
    assert ask.server is not None
    paths = ask.decision.redact if ask.decision is not None else ()
    return {
        "upstream": ask.server,
        "upstream_task_id": upstream.task_id,
        "upstream_tool": ask.upstream_tool,
        "status": "input_required" if upstream.status == "input_required" else "working",
        "poll_interval_ms": upstream.poll_interval_ms,
        "pin": ask.pin,
        "call_id": ask.call_id,
        "decision": decision_of(ask.decision),
        "redacted": values_at(ask.args, paths) if ask.args and paths else (),
    }


def _text(result: Mapping[str, Any]) -> str:
    """The text of a ``CallToolResult`` (wire form), for a status message."""
    blocks = result.get("content") or []
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return " ".join(texts) or "The tool answered an error."
