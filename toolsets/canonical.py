"""Canonical JSON and hashes: the one definition used for pins, argument hashes and audit chains."""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import orjson

__all__ = ["canonical_json", "sha256_hex"]


def canonical_json(value: Any) -> bytes:
    """Serialise ``value`` deterministically (sorted keys, no whitespace, UTF-8), RFC 8785 style.

    The bytes are those of ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False, allow_nan=False)``, which pins and audit chains on record were hashed
    over. orjson writes the same bytes, tens of times faster on large values, for plain JSON
    values (dicts, lists, tuples, strings, integers, booleans, None, and floats it formats as
    ``repr`` does); anything else (other types, subclasses, other floats, cycles), and whatever
    orjson refuses, takes the standard library, which answers or raises as it always did.
    """
    if _plain(value):
        # Refused (non-string keys, integers beyond 64 bits, lone surrogates): as json does.
        with contextlib.suppress(TypeError):
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


_SCALARS: frozenset[type] = frozenset({str, int, bool, type(None)})


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only plain JSON types, no container twice, and only floats that
    orjson writes as `json` does (``repr``)."""
    pending, seen = [value], set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind is float:
            if orjson.dumps(item) != repr(item).encode():
                return False
            continue
        if kind not in (dict, list, tuple) or id(item) in seen:
            return False
        seen.add(id(item))
        pending.extend(item.values() if kind is dict else item)
    return True


def sha256_hex(value: Any) -> str:
    """SHA-256 hex digest of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value)).hexdigest()
