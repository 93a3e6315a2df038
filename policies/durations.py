"""Durations in policy files: ``"500ms"``, ``"50s"``, ``"15m"``, ``"1h"``, ``"1d"`` or seconds."""

from __future__ import annotations

import math
import re
from typing import Final

__all__ = ["DURATION_PATTERN", "format_duration", "parse_duration"]

DURATION_PATTERN: Final = r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$"
_DURATION_RE: Final = re.compile(DURATION_PATTERN)
_UNIT_SECONDS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from a duration string or a number of seconds.

    Args:
        value: ``"15m"``-style string, or an int/float number of seconds.

    Returns:
        The duration in seconds (non-negative, finite).

    Raises:
        ValueError: If the value is not a valid duration.
    """
    if isinstance(value, bool):
        raise ValueError("expected a duration like '15m', '50s', '500ms' or a number of seconds")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION_RE.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        raise ValueError(
            f"invalid duration {value!r}: expected a number of seconds or a string like "
            "'15m', '50s', '1h', '500ms'"
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"invalid duration {value!r}: must be a finite, non-negative number")
    return seconds


def format_duration(seconds: float) -> str:
    """A compact human form of ``seconds`` (``900.0`` -> ``"15m"``)."""
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size and (seconds / size).is_integer():
            return f"{int(seconds / size)}{unit}"
    if seconds < 1 and (seconds * 1000).is_integer():
        return f"{int(seconds * 1000)}ms"
    return f"{seconds:g}s"
