"""How an upstream failure reads in a status detail or a log line."""

from __future__ import annotations

__all__ = ["describe"]


def describe(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` (of its first exception, for a group)."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
