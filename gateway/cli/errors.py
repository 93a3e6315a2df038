"""Errors of the command line, and every error mapped to an exit code, once.

`exit_code_for` walks the exception's MRO and answers the first class `EXIT_CODES` names, so a
subclass exits as its nearest mapped base does; anything of ours not named exits 1.
"""

from __future__ import annotations

from toolsets.errors import (
    ApprovalConflict,
    ConfigError,
    LockgateError,
    StoreUnavailable,
    ToolCollisionError,
    ToolNotFoundError,
    ToolQuarantined,
    UpstreamError,
)

__all__ = ["EXIT_CODES", "ApiError", "UsageError", "exit_code_for"]


class ApiError(LockgateError):
    """The gateway's REST API refused a command, or could not be reached."""


class UsageError(LockgateError):
    """A command-line value is unusable (bad JSON, an unreadable file, a wrong URL); reported as
    one line."""


EXIT_CODES: dict[type[BaseException], int] = {
    LockgateError: 1,
    ApiError: 1,
    ConfigError: 2,
    ToolCollisionError: 2,
    UsageError: 2,
    ToolNotFoundError: 3,
    ToolQuarantined: 3,
    UpstreamError: 4,
    ApprovalConflict: 5,
    StoreUnavailable: 6,
}


def exit_code_for(exc: BaseException) -> int:
    """The exit code for ``exc``: its nearest class in `EXIT_CODES`, else 1."""
    for kind in type(exc).__mro__:
        code = EXIT_CODES.get(kind)
        if code is not None:
            return code
    return 1
