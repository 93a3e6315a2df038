"""`TaskRecord`: one gateway task, as every replica reads it from the storage backend.

A gateway task has its own id (`new_task_id`: opaque, unguessable, never the upstream's raw id);
the record names the upstream that runs it and that server's own task id (None for a task the
gateway itself owns, e.g. a call answered before any upstream saw it). It is bound to the
principal and tenant that created it (`TaskRecord.owned_by`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Literal, cast

__all__ = ["TERMINAL", "TaskRecord", "TaskStatus", "new_task_id"]

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
_PREFIX: Final = "lgt_"


def new_task_id() -> str:
    """A fresh gateway task id: ``lgt_`` and 32 random bytes, URL-safe."""
    return _PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One gateway task.

    Attributes:
        id: The gateway task id the client sees.
        upstream: The server that runs it; None for a gateway-owned task.
        upstream_task_id: That server's task id (never shown to the client).
        principal: The id of the principal that created it.
        tenant: That principal's tenant.
        session_id: The downstream session that created it (status notifications go there).
        tool: The exposed tool name.
        upstream_tool: The tool's name on its server (for the pin check at completion).
        status: ``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled``.
        status_message: What the status says to a person.
        created_at: Seconds since the epoch.
        updated_at: Seconds since the epoch of the last change.
        ttl_ms: How long the task is kept from its creation (None: no limit).
        poll_interval_ms: The polling interval suggested to the client.
        result: The ``CallToolResult`` (wire form) once completed.
        error: The JSON-RPC error (wire form) once failed.
        pin: The tool definition's pin when the task was created.
        cancel_requested: A client asked to cancel it (any replica may have recorded it).
        approval_id: The pending call a held call answered as a task waits on
            (`gateway.tasks.held`); None otherwise.
        call_id: The id of the call that created it (its ``tool.result`` event carries it).
        decision: The policy decision of that call as events carry it (``effect``,
            ``rule_id``, ``redact``).
        redacted: The values at that decision's ``redact`` paths of the call's arguments
            (`gateway.events.redact.values_at`): masked wherever the task's events would show
            them, as a direct call's ``tool.result`` masks them. Kept for that alone (a held
            call's pending call keeps its arguments so too); never shown.
        quarantined_pin: While the result waits for the pin review (`gateway.tasks.review`):
            the pin of the definition the tool had when the task completed; ``result`` holds
            the upstream's result, undelivered.
        lease_owner: The replica following the task now (`gateway.tasks.leases`).
        lease_until: Seconds since the epoch until which that replica's lease holds.
    """

    id: str
    upstream: str | None
    upstream_task_id: str | None
    principal: str
    tenant: str | None
    session_id: str | None
    tool: str
    upstream_tool: str | None = None
    status: TaskStatus = "working"
    status_message: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    pin: str | None = None
    cancel_requested: bool = False
    approval_id: str | None = None
    call_id: str | None = None
    decision: Mapping[str, Any] | None = None
    redacted: tuple[str, ...] = ()
    quarantined_pin: str | None = None
    lease_owner: str | None = None
    lease_until: float = 0.0

    @property
    def terminal(self) -> bool:
        """Whether the task reached ``completed``, ``failed`` or ``cancelled``."""
        return self.status in TERMINAL

    @property
    def quarantined(self) -> bool:
        """Whether its result waits for the pin review (not delivered until accepted)."""
        return self.quarantined_pin is not None and not self.terminal

    def owned_by(self, principal: str, tenant: str | None) -> bool:
        """Whether ``principal`` (of ``tenant``) created this task."""
        return self.principal == principal and self.tenant == tenant

    def expired(self, now: float | None = None) -> bool:
        """Whether its ttl has passed (the task is then gone, as if never created)."""
        if self.ttl_ms is None:
            return False
        return (now if now is not None else time.time()) > self.created_at + self.ttl_ms / 1000

    def moved(self, status: TaskStatus, message: str | None, **changes: Any) -> TaskRecord:
        """This record in ``status`` now (with further field ``changes``)."""
        return replace(
            self, status=status, status_message=message, updated_at=time.time(), **changes
        )

    def to_row(self) -> dict[str, Any]:
        """The record as JSON-compatible data (what the stores keep)."""
        row = asdict(self)
        row["result"] = dict(self.result) if self.result is not None else None
        row["error"] = dict(self.error) if self.error is not None else None
        row["decision"] = dict(self.decision) if self.decision is not None else None
        row["redacted"] = list(self.redacted)
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TaskRecord:
        """The record `to_row` wrote."""
        fields = {k: row[k] for k in cls.__dataclass_fields__ if k in row}
        fields["status"] = cast(TaskStatus, fields.get("status", "working"))
        fields["redacted"] = tuple(fields.get("redacted") or ())
        return cls(**fields)
