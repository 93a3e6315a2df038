"""Deny messages with placeholders, rendered per call with every value escaped.

A rule's (or the defaults') ``message`` may name values of the call: ``{args.record_id}``,
``{args.a.b}``, ``{session.last_args.crm__get_record.record_id}``, ``{session.calls}``,
``{tool.name}``, ``{principal.id}``. ``{{`` and ``}}`` are literal braces. A name is a root
(``args``, ``session``, ``tool``, ``principal``) and keys joined by ``.`` (a key of digits also
indexes a list). Bad syntax, an unknown root or an unknown field of ``tool``, ``principal`` or
``session`` is a load error.

The message is what the model reads, so an argument must not be able to pass for the policy's
own words. Each value is rendered delimited and escaped (`render_value`):

- a string in double quotes, JSON-escaped (quotes, backslashes, newlines and other control
  characters), invisible and bidi characters shown as ``<U+202E>`` (`toolsets.upstream.sanitize`),
  cut after `MAX_VALUE_CHARS` with ``[… lockgate cut N characters]`` after the closing quote;
- anything else as compact JSON, escaped and cut the same way (the marker follows the cut);
- a value the call does not have as ``<missing args.record_id>``; a value under one of the
  decision's ``redact`` paths as ``<redacted args.token>``.

Rendering is one pass: braces inside values are never read as placeholders.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from policies.activation import principal_value, tool_value
from policies.errors import TemplateError
from policies.session import SessionState
from toolsets.context import Principal
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef
from toolsets.upstream.sanitize import CUT_MARKER, served_text

__all__ = [
    "MAX_VALUE_CHARS",
    "ROOTS",
    "MessageTemplate",
    "Placeholder",
    "message_problem",
    "message_templates",
    "parse_message",
    "render_value",
    "rendered",
]

MAX_VALUE_CHARS: Final = 200
"""Characters of one rendered value kept before the cut marker."""

ROOTS: Final = ("args", "session", "tool", "principal")
"""What a placeholder may start with."""

_TOOL_FIELDS: Final = ("name", "server", "upstream_name", "annotations", "flags")
_PRINCIPAL_FIELDS: Final = ("id", "roles", "claims", "tenant")
_TOKENS: Final = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[^\s.{}]+)*")
_CUT_PREFIX: Final = " " + CUT_MARKER.split("{", 1)[0]
_MISSING: Final = object()


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One ``{root.key...}`` of a message.

    Attributes:
        root: ``args``, ``session``, ``tool`` or ``principal``.
        path: The keys below the root.
    """

    root: str
    path: tuple[str, ...]

    @property
    def name(self) -> str:
        """The name as written, e.g. ``args.record_id``."""
        return ".".join((self.root, *self.path))


@dataclass(frozen=True, slots=True)
class MessageTemplate:
    """A parsed message: literal text (braces already unescaped) and placeholders, in order."""

    text: str
    parts: tuple[str | Placeholder, ...]

    @property
    def has_placeholders(self) -> bool:
        """Whether rendering reads the call (else `render` always returns the same text)."""
        return any(isinstance(part, Placeholder) for part in self.parts)

    @property
    def roots(self) -> frozenset[str]:
        """What its placeholders read (``args``, ``session``, ``tool``, ``principal``)."""
        return frozenset(part.root for part in self.parts if isinstance(part, Placeholder))

    def render(
        self,
        *,
        tool: ToolDef,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
        redact: Sequence[str] = (),
    ) -> str:
        """The message for one call; ``redact`` paths (``args.token``) are not shown."""
        roots: dict[str, Callable[[], Any]] = {
            "args": lambda: args if args is not None else _MISSING,
            "session": lambda: session.cel_value() if session is not None else _MISSING,
            "tool": lambda: tool_value(tool),
            "principal": lambda: principal_value(principal),
        }
        values: dict[str, Any] = {}
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            if part.root not in values:
                values[part.root] = roots[part.root]()
            out.append(_render_placeholder(part, values[part.root], redact))
        return "".join(out)


def _render_placeholder(part: Placeholder, root: Any, redact: Sequence[str]) -> str:
    name = part.name
    if part.root == "args" and any(_overlaps(name, path) for path in redact):
        return f"<redacted {name}>"
    value = _lookup(root, part.path)
    return f"<missing {name}>" if value is _MISSING else render_value(value)


def _overlaps(name: str, path: str) -> bool:
    """Whether one of the dotted paths lies within the other."""
    return name == path or name.startswith(path + ".") or path.startswith(name + ".")


def _lookup(value: Any, path: Sequence[str]) -> Any:
    for key in path:
        if value is _MISSING:
            break
        if isinstance(value, Mapping):
            value = value.get(key, _MISSING)
        elif isinstance(value, list | tuple) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return _MISSING
    return value


def render_value(value: Any, max_chars: int = MAX_VALUE_CHARS) -> str:
    """``value`` as a message shows it: a quoted, escaped string or compact JSON, cut after
    ``max_chars`` characters with a marker (see the module docstring)."""
    if not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
        return served_text(text, max_chars)
    escaped = served_text(value, 0)
    if max_chars <= 0 or len(escaped) <= max_chars:
        return json.dumps(escaped, ensure_ascii=False)
    kept, _, marker = served_text(value, max_chars).rpartition(_CUT_PREFIX)
    return f"{json.dumps(kept, ensure_ascii=False)}{_CUT_PREFIX}{marker}"


def _fields(root: str) -> tuple[str, ...] | None:
    """The fields a placeholder may name below ``root`` (None: any)."""
    if root == "tool":
        return _TOOL_FIELDS
    if root == "principal":
        return _PRINCIPAL_FIELDS
    if root == "session":
        return tuple(SessionState("").cel_value())
    return None


def _placeholder(inner: str, at: int) -> Placeholder:
    written = "{" + inner + "}"
    if not _NAME.fullmatch(inner):
        raise TemplateError(
            f"invalid placeholder {written!r} at character {at}: write a name such as "
            "{args.NAME}, {session.calls}, {tool.name} or {principal.id} ('{{' and '}}' for "
            "literal braces)"
        )
    root, *path = inner.split(".")
    if root not in ROOTS:
        raise TemplateError(
            f"unknown placeholder {written!r} at character {at}: names start with "
            f"{', '.join(ROOTS)}"
        )
    fields = _fields(root)
    if fields is not None and path and path[0] not in fields:
        raise TemplateError(
            f"unknown field {path[0]!r} in {written!r} at character {at} "
            f"({root} has {', '.join(fields)})"
        )
    return Placeholder(root, tuple(path))


def parse_message(text: str) -> MessageTemplate:
    """Parse a message.

    Raises:
        TemplateError: With what is wrong and where (the character offset, from 0).
    """
    parts: list[str | Placeholder] = []
    literal: list[str] = []
    start = 0
    for token in _TOKENS.finditer(text):
        literal.append(text[start : token.start()])
        start = token.end()
        found = token.group()
        if found in ("{{", "}}"):
            literal.append(found[0])
        elif found == "{":
            raise TemplateError(
                f"unclosed '{{' at character {token.start()} (write '{{{{' for a literal brace)"
            )
        elif found == "}":
            raise TemplateError(
                f"single '}}' at character {token.start()} (write '}}}}' for a literal brace)"
            )
        else:
            parts.append("".join(literal))
            literal = []
            parts.append(_placeholder(token.group(1), token.start()))
    literal.append(text[start:])
    parts.append("".join(literal))
    return MessageTemplate(text, tuple(part for part in parts if part != ""))


def message_problem(text: str) -> str | None:
    """What is wrong with a message's placeholders, or None (for load-time validation)."""
    try:
        parse_message(text)
    except TemplateError as exc:
        return str(exc)
    return None


def message_templates(messages: Iterable[str | None]) -> dict[str, MessageTemplate]:
    """The ``messages`` that need rendering (placeholders or escaped braces), parsed, by text."""
    parsed = (
        parse_message(text) for text in set(messages) if text and ("{" in text or "}" in text)
    )
    return {template.text: template for template in parsed}


def rendered(
    decision: Decision,
    templates: Mapping[str, MessageTemplate],
    *,
    tool: ToolDef,
    args: Mapping[str, Any] | None,
    principal: Principal,
    session: SessionState | None,
) -> Decision:
    """``decision`` with its message rendered for one call when ``templates`` holds it."""
    template = templates.get(decision.message) if decision.message else None
    if template is None:
        return decision
    message = template.render(
        tool=tool, args=args, principal=principal, session=session, redact=decision.redact
    )
    return dataclasses.replace(decision, message=message)
