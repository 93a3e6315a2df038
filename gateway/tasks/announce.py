"""`TaskAnnouncer`: tells of each change of a task: its event on the audit log and the bus (its
status message masked as its call's result is), the ``tool.result`` of a failed or cancelled
upstream task's call, and the listeners (the sessions' status notifications)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from gateway.events.model import Event
from gateway.events.recorder import Recorder
from gateway.events.redact import mask_values, redact
from gateway.events.task_events import PinReviewOutcome, task_completed, task_status
from gateway.tasks.record import TaskRecord
from gateway.tasks.review import TaskReview

__all__ = ["StatusListener", "TaskAnnouncer"]

log = logging.getLogger("lockgate.tasks")
StatusListener = Callable[[TaskRecord], Awaitable[None]]


class TaskAnnouncer:
    """Announces task events and changes (see the module docstring).

    Args:
        recorder: Puts the task events on the audit log and the bus.
        review: Publishes the ``tool.result`` of a failed or cancelled upstream task's call.
    """

    def __init__(self, recorder: Recorder, review: TaskReview) -> None:
        self._recorder = recorder
        self._review = review
        self._listeners: list[StatusListener] = []

    def on_status(self, listener: StatusListener) -> None:
        """Tell ``listener`` every change announced."""
        self._listeners.append(listener)

    async def record(self, event: Callable[..., Event], record: TaskRecord, **how: Any) -> None:
        """Put ``event`` of ``record`` on record, its status message masked as its call's
        result is (an upstream's message may quote an argument)."""
        message = record.status_message
        if message is not None:
            message = mask_values(redact(message), record.redacted)
        await self._recorder.record(event(replace(record, status_message=message), **how))

    async def changed(self, record: TaskRecord) -> None:
        """Announce a change of ``record``: its event, its end's ``tool.result``, its listeners."""
        if record.terminal:
            if record.upstream is not None and record.status != "completed":
                await self._report_end(record)
            await self.record(task_completed, record, pin_review=_reviewed(record))
        else:
            await self.record(task_status, record, quarantined=record.quarantined)
        for listener in list(self._listeners):
            try:
                await listener(record)
            except Exception as exc:  # a gone session must not stop the others
                log.debug("task %s: status not delivered: %r", record.id, exc)

    async def _report_end(self, record: TaskRecord) -> None:
        """The ``tool.result`` of a failed or cancelled upstream task's call (a completed
        one's went out as its result was delivered); never fails the task's end."""
        try:
            await self._review.ended(record)
        except Exception:
            log.exception("task %s: its call's tool.result not published", record.id)


def _reviewed(record: TaskRecord) -> PinReviewOutcome | None:
    """How the pin review of an ended task went (None: its result was never quarantined)."""
    if record.quarantined_pin is None:
        return None
    if record.status == "completed":
        return "accepted"
    return "discarded" if record.status == "failed" else "cancelled"
