"""2026-07-28 task status pushed on ``subscriptions/listen`` streams (the Tasks extension,
SEP-2663: a stream's filter names ``taskIds``; the acknowledgement lists those honored; each
change comes as ``notifications/tasks`` carrying what ``tasks/get`` would answer then).

Only the caller's own tasks are honored (another principal's, an unknown or an expired id is
left out of the acknowledgement, as `tasks/get` answers it missing). Right after the
acknowledgement the stream carries each honored task as it is then, so a change made before the
stream opened is not missed; after that, every change to the task, made on this replica or,
with PostgreSQL, on another (the task events reach every replica through the cluster's event
log, `gateway.postgres.event_log`; the stream reads the record again and writes it unless it told
that state already). The
stream itself is the SDK's listen handler (`gateway.resources.listen_streams`), which knows no
task ids: it runs with the request's session seen through `_TaskStream`, which adds the honored
ids to its acknowledgement and writes the task frames on the same response stream.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import RequestId, SubscriptionsAcknowledgedNotification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from gateway.events.bus import EventBus, Subscription
from gateway.tasks.errors import TaskNotFound
from gateway.tasks.record import TaskRecord
from gateway.tasks.service import TaskService
from gateway.tasks.wire import detailed_task
from toolsets.context import Principal

__all__ = ["MAX_TASK_IDS", "TASK_NOTIFICATION", "TaskListen"]

log = logging.getLogger("lockgate.tasks")
Ctx = ServerRequestContext[Any]
TASK_NOTIFICATION: Final = "notifications/tasks"
TASK_EVENTS: Final = ("task.created", "task.status", "task.completed")
MAX_TASK_IDS: Final = 1000
"""The most task ids one listen stream is told about."""


class _Notification(BaseModel):
    """A wire notification outside the SDK's typed union (``notifications/tasks``)."""

    method: str
    params: dict[str, Any]


def task_frame(record: TaskRecord, subscription_id: RequestId) -> _Notification:
    """The ``notifications/tasks`` frame of ``record`` on stream ``subscription_id``."""
    params = detailed_task(record, modern=True)
    params.pop("resultType", None)  # the notification is the detailed task, not a result
    params["_meta"] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    return _Notification(method=TASK_NOTIFICATION, params=params)


class _TaskStream:
    """The listen request's session as the SDK's listen handler sees it (everything else is
    the session's own): the acknowledgement also lists ``honored``, followed by each task as it
    is then; `tell` writes a task's change on the same stream once acknowledged."""

    def __init__(
        self, session: ServerSession, subscription_id: RequestId, honored: list[TaskRecord]
    ) -> None:
        self._session = session
        self.subscription_id = subscription_id
        self.honored = honored
        self.acknowledged = False
        self._told: dict[str, tuple[str, float, str | None]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    async def send_notification(self, notification: Any, related_request_id: Any = None) -> None:
        if not isinstance(notification, SubscriptionsAcknowledgedNotification):
            await self._session.send_notification(notification, related_request_id)
            return
        ids = [record.id for record in self.honored]
        honored = notification.params.notifications.model_copy(update={"taskIds": ids})
        params = notification.params.model_copy(update={"notifications": honored})
        await self._session.send_notification(
            notification.model_copy(update={"params": params}), related_request_id
        )
        self.acknowledged = True
        for record in self.honored:
            await self.tell(record)

    async def tell(self, record: TaskRecord) -> None:
        """Write ``record`` on the stream (nothing before the acknowledgement, nor a state it
        told already: a change is heard both from this replica and from the event log)."""
        state = (record.status, record.updated_at, record.status_message)
        if self.acknowledged and self._told.get(record.id) != state:
            self._told[record.id] = state
            frame = cast(Any, task_frame(record, self.subscription_id))
            await self._session.send_notification(frame, self.subscription_id)


class TaskListen:
    """Task status on 2026-07-28 listen streams (see the module docstring).

    Args:
        service: The gateway's tasks (ownership, the current records).
        principal_of: Who makes a request.
    """

    def __init__(
        self,
        service: TaskService,
        principal_of: Callable[[Ctx], Principal],
        events: Callable[[], EventBus],
    ) -> None:
        self.service = service
        self._principal_of = principal_of
        self._events = events
        self._streams: dict[str, set[_TaskStream]] = {}

    async def intercept(self, ctx: Ctx, call_next: Any) -> Any:
        """Server middleware: a 2026-07-28 ``subscriptions/listen`` naming ``taskIds``."""
        wanted = _task_ids(ctx)
        if not wanted or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        principal = self._principal_of(ctx)
        async with (
            self._events().subscribe(TASK_EVENTS, name="task listen") as events,
            anyio.create_task_group() as group,
        ):
            honored = await self._owned(wanted, principal)
            stream = _TaskStream(ctx.session, ctx.request_id or "", honored)
            group.start_soon(self._follow, events, stream, principal)
            try:
                return await self._listen(ctx, stream, call_next)
            finally:
                group.cancel_scope.cancel()

    async def _follow(
        self, events: Subscription, stream: _TaskStream, principal: Principal
    ) -> None:
        """Tell ``stream`` the changes of its tasks that the (cluster's) event stream carries."""
        ids = {record.id for record in stream.honored}
        async for event in events:
            task_id = event.data.get("task_id")
            if task_id not in ids:
                continue
            try:
                await stream.tell(await self.service.find(task_id, principal))
            except Exception as exc:  # gone meanwhile, or the stream closing: the next event
                log.debug("task %s: status not written to a listen stream: %r", task_id, exc)

    async def _listen(self, ctx: Ctx, stream: _TaskStream, call_next: Any) -> Any:
        honored = stream.honored
        for record in honored:
            self._streams.setdefault(record.id, set()).add(stream)
        try:
            return await call_next(dataclasses.replace(ctx, session=cast(Any, stream)))
        finally:
            for record in honored:
                streams = self._streams.get(record.id, set())
                streams.discard(stream)
                if not streams:
                    self._streams.pop(record.id, None)

    async def _owned(self, wanted: list[str], principal: Principal) -> list[TaskRecord]:
        honored: dict[str, TaskRecord] = {}
        for task_id in wanted[:MAX_TASK_IDS]:
            try:
                honored[task_id] = await self.service.find(task_id, principal)
            except TaskNotFound:
                continue
        return list(honored.values())

    async def notify(self, record: TaskRecord) -> None:
        """Tell the streams that hold ``record`` its new state."""
        for stream in list(self._streams.get(record.id, ())):
            try:
                await stream.tell(record)
            except Exception as exc:  # a stream closing meanwhile must not stop the others
                log.debug("task %s: status not written to a listen stream: %r", record.id, exc)


def _task_ids(ctx: Ctx) -> list[str]:
    if ctx.method != "subscriptions/listen" or not isinstance(ctx.params, Mapping):
        return []
    notifications = ctx.params.get("notifications")
    ids = notifications.get("taskIds") if isinstance(notifications, Mapping) else None
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
