"""What lockgate serves of an upstream tool's text: invisible characters escaped, length capped.

Titles and descriptions are untrusted text the model reads. Characters a person reviewing the
definition cannot see are replaced by visible escapes, and text longer than the server's
``max_description`` is cut with a marker. Warning flags (`toolsets.upstream.flags`) are computed on
the raw upstream text first; the pin covers the served text, so escaping (rather than stripping)
keeps a change in hidden characters a change of the pin.

Escapes, chosen to read plainly in a listing:

- ``<U+200B>``: one invisible or format character by code point (upper-case hex, at least four
  digits). That is every Cf character (zero-width space and joiners, LRM/RLM, bidi embeddings,
  overrides and isolates, word joiner, BOM, soft hyphen...), every control character except
  tab, line feed and carriage return, lone surrogates, and the other default-ignorable code
  points (Hangul fillers, combining grapheme joiner, variation selectors). A single variation
  selector right after a visible character (emoji presentation, ``❤️``) is kept.
- ``<hidden:"ignore previous">``: a run of Unicode tag characters (U+E0020-U+E007E) spelling
  ASCII, decoded and quoted as a JSON string, so the hidden text can be read.
- ``[… lockgate cut 1234 characters]``: appended (after a space) where a text was cut; the
  count is of escaped characters not served. Escapes are never split.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "CUT_MARKER",
    "DEFAULT_MAX_DESCRIPTION",
    "served_annotations",
    "served_schema",
    "served_text",
]

DEFAULT_MAX_DESCRIPTION: Final = 4096
"""Characters of one title or description served by default (0 means no limit)."""

CUT_MARKER: Final = "[… lockgate cut {cut} characters]"
"""Appended to a cut text; ``cut`` is how many (escaped) characters were left out."""

_TAGS: Final = "\U000e0020-\U000e007e"
_SELECTORS: Final = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_IGNORABLE_CLASS: Final = (
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
"""Default-ignorable code points (Unicode DerivedCoreProperties), the ones Cf lacks among them."""
_IGNORABLE: Final = re.compile(f"[{_IGNORABLE_CLASS}]")
_INVISIBLE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs"})
_TEXT_KEYS: Final = frozenset({"title", "description"})
_VALUE_KEYS: Final = frozenset({"const", "default", "enum", "example", "examples"})
_SCHEMA_MAPS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


@functools.cache
def _candidates() -> re.Pattern[str]:
    """Runs of tag characters, runs of variation selectors, and any other character to escape.

    Built on first use from the running Unicode database: categories Cc (but tab, line feed and
    carriage return), Cf and Cs occur in planes 0, 1 and 14 only.
    """
    codes = [
        code
        for plane in (0, 1, 14)
        for code in range(plane << 16, (plane + 1) << 16)
        if unicodedata.category(chr(code)) in _INVISIBLE_CATEGORIES and chr(code) not in "\t\n\r"
    ]
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    members = "".join(f"{chr(first)}-{chr(last)}" for first, last in ranges) + _IGNORABLE_CLASS
    return re.compile(f"(?P<tags>[{_TAGS}]+)|(?P<selectors>[{_SELECTORS}]+)|[{members}]")


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in _INVISIBLE_CATEGORIES or bool(_IGNORABLE.match(char))


def _code(char: str) -> str:
    return f"<U+{ord(char):04X}>"


def _escape(match: re.Match[str]) -> str | None:
    """The escape for one candidate match, or None when it is visible and stays as it is."""
    if tags := match.group("tags"):
        hidden = "".join(chr(ord(char) - 0xE0000) for char in tags)
        return f"<hidden:{json.dumps(hidden)}>"
    if selectors := match.group("selectors"):
        start, text = match.start(), match.string
        after = text[start - 1] if start else " "
        lone = len(selectors) == 1 and selectors <= "\ufe0f"  # not a supplement selector
        if lone and not after.isspace() and not _invisible(after):
            return None
        return "".join(_code(char) for char in selectors)
    return _code(match.group())


def _pieces(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` escaped, as ``(piece, is_escape)``: plain runs may be cut, escapes may not."""
    start = 0
    for match in _candidates().finditer(text):
        escaped = _escape(match)
        if escaped is None:
            continue
        if match.start() > start:
            yield text[start : match.start()], False
        yield escaped, True
        start = match.end()
    if start < len(text):
        yield text[start:], False


def served_text(text: str, max_chars: int = DEFAULT_MAX_DESCRIPTION) -> str:
    """``text`` as served: invisible characters escaped, then cut after ``max_chars``.

    Args:
        text: Untrusted upstream text (a title or description).
        max_chars: The most characters kept before the cut marker; 0 means no limit.

    Returns:
        ``text`` itself when it has nothing to escape and fits.
    """
    if _candidates().search(text) is None and (max_chars <= 0 or len(text) <= max_chars):
        return text
    pieces = list(_pieces(text))
    escaped = "".join(piece for piece, _ in pieces)
    if max_chars <= 0 or len(escaped) <= max_chars:
        return escaped
    kept: list[str] = []
    room = max_chars
    for piece, is_escape in pieces:
        if len(piece) > room:
            kept.append("" if is_escape else piece[:room])
            break
        kept.append(piece)
        room -= len(piece)
    served = "".join(kept)
    return f"{served} {CUT_MARKER.format(cut=len(escaped) - len(served))}"


def served_schema(schema: Mapping[str, Any], max_chars: int = DEFAULT_MAX_DESCRIPTION) -> Any:
    """A JSON Schema whose ``title`` and ``description`` strings are `served_text`.

    Nothing validation reads changes: property names, ``enum``, ``const``, ``default``,
    ``examples``, ``pattern`` and every other keyword stay as they are. Returns ``schema``
    itself when nothing was escaped or cut.
    """
    return _schema(schema, max_chars)


def served_annotations(
    annotations: Mapping[str, Any] | None, max_chars: int = DEFAULT_MAX_DESCRIPTION
) -> Mapping[str, Any] | None:
    """MCP tool annotations (wire form) with their display ``title`` as `served_text`."""
    title = annotations.get("title") if annotations else None
    if annotations is None or not isinstance(title, str):
        return annotations
    served = served_text(title, max_chars)
    return annotations if served == title else {**annotations, "title": served}


def _schema(schema: Mapping[str, Any], max_chars: int) -> Any:
    changed: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _VALUE_KEYS:
            continue
        if key in _TEXT_KEYS and isinstance(value, str):
            served: Any = served_text(value, max_chars)
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            served = _schema_map(value, max_chars)
        else:
            served = _any(value, max_chars)
        if served is not value and served != value:
            changed[key] = served
    return {**schema, **changed} if changed else schema


def _schema_map(schemas: Mapping[str, Any], max_chars: int) -> Any:
    """``properties`` and the like: names (kept as they are) to schemas."""
    served = {name: _any(value, max_chars) for name, value in schemas.items()}
    same = all(served[name] is value for name, value in schemas.items())
    return schemas if same else served


def _any(value: Any, max_chars: int) -> Any:
    """A value inside a schema: objects are (sub)schemas, arrays hold them; strings stay."""
    if isinstance(value, Mapping):
        return _schema(value, max_chars)
    if isinstance(value, list):
        items = [_any(item, max_chars) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
