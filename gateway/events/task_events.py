"""Constructors of the task events: ``task.created`` (an upstream or the gateway took a
task-augmented call), ``task.status`` (a task moved to a non-terminal status) and
``task.completed`` (it reached ``completed``, ``failed`` or ``cancelled``). A result withheld
because the tool's definition changed meanwhile makes a ``task.status`` with ``quarantined``
true; the ``task.completed`` that follows the pin review says how it went in ``pin_review``
(``accepted``: delivered; ``discarded``, also ``quarantined`` true; ``cancelled``).

All carry ``task_id`` (the gateway's), ``tool``, ``server`` (None for a gateway-owned task),
``principal``, ``session_id``, ``tenant`` when there is one, ``status`` and ``status_message``;
never the arguments or the result.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from gateway.events.model import Event

__all__ = ["PinReviewOutcome", "TaskLike", "task_completed", "task_created", "task_status"]

PinReviewOutcome = Literal["accepted", "discarded", "cancelled"]


class TaskLike(Protocol):
    """What a task event reads of a gateway task record."""

    @property
    def id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def upstream(self) -> str | None: ...
    @property
    def principal(self) -> str: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def status(self) -> str: ...
    @property
    def status_message(self) -> str | None: ...


def _data(task: TaskLike) -> dict[str, Any]:
    data: dict[str, Any] = {
        "task_id": task.id,
        "tool": task.tool,
        "server": task.upstream,
        "principal": task.principal,
        "session_id": task.session_id,
        "status": task.status,
        "status_message": task.status_message,
    }
    if task.tenant is not None:
        data["tenant"] = task.tenant
    return data


def task_created(task: TaskLike) -> Event:
    """``task.created``."""
    return Event(type="task.created", data=_data(task))


def task_status(task: TaskLike, *, quarantined: bool = False) -> Event:
    """``task.status`` (``quarantined``: its result waits for the pin review)."""
    data = _data(task)
    if quarantined:
        data["quarantined"] = True
    return Event(type="task.status", data=data)


def task_completed(task: TaskLike, *, pin_review: PinReviewOutcome | None = None) -> Event:
    """``task.completed`` (``pin_review``: how the review of its withheld result went)."""
    data = {**_data(task), "quarantined": pin_review == "discarded"}
    if pin_review is not None:
        data["pin_review"] = pin_review
    return Event(type="task.completed", data=data)
