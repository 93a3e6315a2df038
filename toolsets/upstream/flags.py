"""Warning flags on upstream tool definitions: signals of tool poisoning, not a defence.

Descriptions are untrusted text the model reads. A flag marks what reviewers and policies should
look at (``"injection-marker" in tool.flags`` in a CEL condition); approval and least privilege
remain the defence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal, get_args

__all__ = ["FLAGS", "INJECTION_MARKERS", "MAX_DESCRIPTION", "Flag", "tool_flags"]

Flag = Literal["injection-marker", "invisible-characters", "long-description", "sensitive-path"]
"""The warning flags a tool definition may carry."""

FLAGS: Final[tuple[Flag, ...]] = get_args(Flag)
"""Every flag name, sorted (policies name them in ``hide_flagged`` and ``accept_flags``)."""

MAX_DESCRIPTION: Final = 2000
"""Characters beyond which a description is flagged ``long-description``."""

_INJECTION = re.compile(
    r"<\s*/?\s*(important|system|instructions?)\s*>|ignore (all |any )?(previous|prior|above) "
    r"(instructions|messages)|do not (tell|mention|inform) (this to )?the user|"
    r"before using (this|any other) tool",
    re.IGNORECASE,
)
INJECTION_MARKERS: Final = _INJECTION
"""The ``injection-marker`` pattern (the built-in content inspector reuses it on results)."""
_SENSITIVE_PATH = re.compile(
    r"~/\.ssh|\bid_(rsa|ecdsa|ed25519)\b|\.aws/credentials|/etc/(passwd|shadow)|\.env\b|"
    r"mcp\.json|\.cursor/",
    re.IGNORECASE,
)
_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)


def _texts(value: Any) -> Iterator[str]:
    """Every string in a JSON value (descriptions inside the schema included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)


def _revealed(text: str) -> str:
    """``text`` as a model may read it: tag characters as the ASCII they encode, other
    invisible characters removed (so a marker split or hidden by them is still found)."""
    return _INVISIBLE.sub(lambda m: chr(ord(m[0]) - 0xE0000) if ord(m[0]) >= 0xE0020 else "", text)


def tool_flags(description: str | None, input_schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The warning flags of a tool definition, sorted; empty when nothing stands out. Markers
    and paths are looked for in the text as written and as revealed (see `_revealed`)."""
    raw = [description or "", *_texts(input_schema)]
    texts = raw + [_revealed(text) for text in raw if _INVISIBLE.search(text)]
    flags: set[Flag] = set()
    if any(_INJECTION.search(text) for text in texts):
        flags.add("injection-marker")
    if any(_SENSITIVE_PATH.search(text) for text in texts):
        flags.add("sensitive-path")
    if any(_INVISIBLE.search(text) for text in raw):
        flags.add("invisible-characters")
    if len(description or "") > MAX_DESCRIPTION:
        flags.add("long-description")
    return tuple(sorted(flags))
