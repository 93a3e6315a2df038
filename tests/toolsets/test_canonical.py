"""`canonical_json` writes exactly the bytes the standard library's canonical form did, so pins
and audit chains recorded before keep verifying, whichever encoder produced them."""

from __future__ import annotations

import datetime
import enum
import json
import math
import uuid
from typing import Any

import pytest

from toolsets.canonical import canonical_json, sha256_hex


def reference(value: Any) -> bytes:
    """The canonical form as first defined (and as recorded in existing pins and audit logs)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


VALUES = [
    pytest.param({"b": 1, "a": [1, 2, {"z": None, "y": True}]}, id="nested"),
    pytest.param({"text": 'ü\u2028\x00\x1f\x7f"\\/\n\t\b\f\r'}, id="escapes"),
    pytest.param(
        {"k": "\ud7ff\ue000\U0001f600", "n": -0, "i": 2**63 - 1, "j": -(2**63)}, id="ints"
    ),
    pytest.param({"\x01": 1, "A": 2, "a": 3, "é": 4, "😀": 5, "ÿ": 6, "Ā": 7}, id="key-order"),
    pytest.param({"e": {}, "l": [], "s": "", "t": (1, "two")}, id="empty-and-tuple"),
    pytest.param({"big": "x" * 300_000, "also": ["y" * 70_000]}, id="large"),
    pytest.param({"f": 0.1, "g": 1e-07, "h": 1e16, "k": -0.0, "m": 100.0}, id="floats"),
    pytest.param({"duration_ms": 12.345, "text": "x" * 300_000, "e": 1.5e300}, id="event"),
    pytest.param([5e-324, 0.30000000000000004, 2.0**53, 1e-5], id="float-edges"),
    pytest.param({"huge": 2**70, "neg": -(2**65)}, id="beyond-64-bits"),
    pytest.param({2: "int keys", 1: "are sorted as ints"}, id="non-string-keys"),
    pytest.param([True, False, None, 0, -1, "1e5"], id="list"),
]


@pytest.mark.parametrize("value", VALUES)
def test_the_bytes_are_the_standard_librarys(value: Any) -> None:
    assert canonical_json(value) == reference(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_as_before(bad: float) -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_json({"value": [bad]})


def test_a_lone_surrogate_is_refused_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical_json({"value": "\ud800"})


def test_the_hash_covers_the_canonical_bytes() -> None:
    assert sha256_hex({"b": 1, "a": 2}) == sha256_hex({"a": 2, "b": 1})
    assert sha256_hex({"a": 1}) != sha256_hex({"a": 1.0})


class Color(enum.Enum):
    RED = "red"


class Number(float):
    """A float subclass (as numpy's ``float64`` is)."""


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"n": Number(1.5)}, id="float-subclass"),
        pytest.param({"shared": [[1, 2]] * 2}, id="shared-container"),
    ],
)
def test_values_beyond_plain_json_still_get_the_standard_librarys_bytes(value: Any) -> None:
    assert canonical_json(value) == reference(value)


def test_a_cycle_is_refused_as_before() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(cyclic)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(uuid.UUID(int=1), id="uuid"),
        pytest.param(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), id="datetime"),
        pytest.param(Color.RED, id="enum"),
    ],
)
def test_what_json_cannot_encode_is_still_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical_json({"value": value})
