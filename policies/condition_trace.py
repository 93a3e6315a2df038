"""Which part of a rule's ``when`` held a call: a condition written ``a || b`` is checked part by
part, so an approver reads the part that matched rather than the whole expression."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from policies.activation import build_context
from policies.cel_conditions import Condition, compile_condition
from policies.errors import ConditionError
from policies.rules import CompiledRule
from policies.session import SessionState
from policies.tool_labels import ToolLabels
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

__all__ = ["ConditionPart", "condition_words", "or_parts", "trace_when"]

_STRING_LITERAL: Final = re.compile(
    r"""[rRbB]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')"""
)
_OPEN: Final = "([{"
_CLOSE: Final = ")]}"


@dataclass(frozen=True, slots=True)
class ConditionPart:
    """One ``||`` part of a ``when`` and whether it held the call.

    Attributes:
        source: The part as written.
        held: True or False; None when it could not be checked (a value it reads is gone).
    """

    source: str
    held: bool | None


def _masked(source: str) -> str:
    """``source`` with string literals blanked, positions kept (a ``||`` in a string is text)."""
    return _STRING_LITERAL.sub(lambda m: "_" * len(m.group(0)), source)


def _enclosing(masked: str) -> bool:
    """Whether ``masked`` is one parenthesised expression: ``(a || b)``."""
    if not (masked.startswith("(") and masked.endswith(")")):
        return False
    depth = 0
    for index, char in enumerate(masked):
        depth += (char in _OPEN) - (char in _CLOSE)
        if depth == 0 and index < len(masked) - 1:
            return False
    return True


def or_parts(source: str) -> tuple[str, ...]:
    """The top-level ``||`` parts of the CEL expression ``source`` (itself alone when it has
    none, or when a top-level ``? :`` binds looser than them)."""
    text = source.strip()
    while _enclosing(_masked(text)):
        text = text[1:-1].strip()
    masked, depth, start = _masked(text), 0, 0
    parts: list[str] = []
    index = 0
    while index < len(masked):
        char = masked[index]
        depth += (char in _OPEN) - (char in _CLOSE)
        if depth == 0 and char == "?":
            return (source.strip(),)
        if depth == 0 and masked.startswith("||", index):
            parts.append(text[start:index].strip())
            start = index = index + 2
            continue
        index += 1
    parts.append(text[start:].strip())
    return tuple(parts) if len(parts) > 1 else (source.strip(),)


def trace_when(
    rule: CompiledRule,
    tool: ToolDef,
    args: Mapping[str, Any],
    principal: Principal,
    session: SessionState | None,
    *,
    labels: ToolLabels | None = None,
) -> tuple[ConditionPart, ...]:
    """Each ``||`` part of ``rule``'s ``when`` checked against this call (empty without one)."""
    if rule.when is None:
        return ()
    try:
        context = build_context(rule.when.needs, tool, args, principal, session, labels=labels)
    except ConditionError:
        return tuple(ConditionPart(part, None) for part in or_parts(rule.when.source))
    return tuple(ConditionPart(part, _held(part, context)) for part in or_parts(rule.when.source))


def _held(part: str, context: Any) -> bool | None:
    try:
        condition: Condition = compile_condition(part)
        return condition.evaluate(context, {})
    except (ValueError, ConditionError):
        return None


def condition_words(rule: CompiledRule, parts: tuple[ConditionPart, ...]) -> str:
    """``rule``'s condition in plain words: the part of its ``when`` that held (all of it when
    it has one part), and its ``unless`` that did not; empty for a rule without conditions."""
    words = []
    if rule.when is not None:
        held = [part.source for part in parts if part.held]
        if len(parts) > 1 and held:
            others = [part.source for part in parts if not part.held]
            words.append(
                f"when {' and '.join(held)} (the part that held of: {rule.when.source}"
                + (f"; not {', '.join(others)})" if others else ")")
            )
        else:
            words.append(f"when {rule.when.source}")
    if rule.unless is not None:
        words.append(f"and not {rule.unless.source} (its unless)")
    return " ".join(words)
