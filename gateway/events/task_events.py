"""Constructors of the task events: ``task.created`` (an upstream or the gateway took a
task-augmented call), ``task.status`` (a task moved to a non-terminal status) and
``task.completed`` (it reached ``completed``, ``failed`` or ``cancelled``; ``quarantined`` when
its result is withheld because the tool's definition changed meanwhile).

All carry ``task_id`` (the gateway's), ``tool``, ``server`` (None for a gateway-owned task),
``principal``, ``session_id``, ``tenant`` when there is one, ``status`` and ``status_message``;
never the arguments or the result.
"""

from __future__ import annotations

from typing import Any, Protocol

from gateway.events.model import Event

__all__ = ["TaskLike", "task_completed", "task_created", "task_status"]


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


def task_status(task: TaskLike) -> Event:
    """``task.status``."""
    return Event(type="task.status", data=_data(task))


def task_completed(task: TaskLike, *, quarantined: bool = False) -> Event:
    """``task.completed``."""
    return Event(type="task.completed", data={**_data(task), "quarantined": quarantined})
