"""JSON on the hot path: orjson, falling back to the standard library for what orjson refuses
(integers beyond 64 bits, non-string keys)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "loads"]

_AS_JSON_DOES = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
"""Datetimes and dataclasses go to ``default`` (or are refused), as with `json.dumps`."""


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None) -> bytes:
    """Compact UTF-8 JSON (non-ASCII characters kept as they are); ``default`` converts what
    JSON has no type for, as in `json.dumps`."""
    try:
        return orjson.dumps(value, default=default, option=_AS_JSON_DOES)
    except TypeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=default)
        return text.encode()


def loads(data: bytes | str) -> Any:
    """The value ``data`` encodes.

    Raises:
        ValueError: ``data`` is not JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # numbers orjson cannot hold; raises ValueError if not JSON
