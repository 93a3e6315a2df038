"""Warning flags on upstream tool definitions: signals of tool poisoning, not a defence.

Descriptions are untrusted text the model reads. A flag marks what reviewers and policies should
look at (``"injection-marker" in tool.flags`` in a CEL condition); approval and least privilege
remain the defence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["MAX_DESCRIPTION", "tool_flags"]

MAX_DESCRIPTION: Final = 2000
"""Characters beyond which a description is flagged ``long-description``."""

_INJECTION = re.compile(
    r"<\s*/?\s*(important|system|instructions?)\s*>|ignore (all |any )?(previous|prior|above) "
    r"(instructions|messages)|do not (tell|mention|inform) (this to )?the user|"
    r"before using (this|any other) tool",
    re.IGNORECASE,
)
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


def tool_flags(description: str | None, input_schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The warning flags of a tool definition, sorted; empty when nothing stands out."""
    texts = [description or "", *_texts(input_schema)]
    flags = set()
    if any(_INJECTION.search(text) for text in texts):
        flags.add("injection-marker")
    if any(_SENSITIVE_PATH.search(text) for text in texts):
        flags.add("sensitive-path")
    if any(_INVISIBLE.search(text) for text in texts):
        flags.add("invisible-characters")
    if len(description or "") > MAX_DESCRIPTION:
        flags.add("long-description")
    return tuple(sorted(flags))
