"""The task errors: one, `TaskNotFound`, the same for a missing, expired or foreign task."""

from __future__ import annotations

from toolsets.errors import LockgateError

__all__ = ["TaskNotFound"]


class TaskNotFound(LockgateError):
    """No task by that id for this caller (missing, expired, or another principal's)."""

    def __init__(self, task_id: str) -> None:
        super().__init__("Failed to retrieve task: Task not found")
        self.task_id = task_id
