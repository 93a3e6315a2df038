"""Errors mapped outward, once: exit codes and HTTP statuses."""

from __future__ import annotations

from toolsets.errors import (
    ApprovalConflict,
    AuditUnavailable,
    ConfigError,
    LockgateError,
    StoreUnavailable,
    ToolCollisionError,
    ToolNotFoundError,
    ToolQuarantined,
    UpstreamError,
)

__all__ = ["exit_code_for", "http_status_for"]

_EXIT_CODES: tuple[tuple[type[LockgateError], int], ...] = (
    (ConfigError, 2),
    (ToolCollisionError, 2),
    (ToolNotFoundError, 3),
    (ToolQuarantined, 3),
    (UpstreamError, 4),
    (ApprovalConflict, 5),
    (StoreUnavailable, 6),
)

_HTTP_STATUSES: tuple[tuple[type[LockgateError], int], ...] = (
    (ConfigError, 400),
    (ToolNotFoundError, 404),
    (ApprovalConflict, 409),
    (ToolQuarantined, 409),
    (UpstreamError, 502),
    (AuditUnavailable, 503),
    (StoreUnavailable, 503),
)


def exit_code_for(exc: LockgateError) -> int:
    """The CLI exit code for ``exc`` (1 when nothing more specific applies)."""
    return next((code for kind, code in _EXIT_CODES if isinstance(exc, kind)), 1)


def http_status_for(exc: LockgateError) -> int:
    """The HTTP status for ``exc`` (400 when nothing more specific applies)."""
    return next((code for kind, code in _HTTP_STATUSES if isinstance(exc, kind)), 400)
