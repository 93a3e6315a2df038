"""CEL ``when`` / ``unless`` conditions: compiled once, checked at load, evaluated fail-closed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import cel

from policies.session import SessionState
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

__all__ = [
    "ALLOWED_VARIABLES",
    "Condition",
    "ConditionError",
    "build_context",
    "compile_condition",
    "condition_problem",
]

ALLOWED_VARIABLES: Final = frozenset({"tool", "args", "principal", "session"})
"""The only names a condition may read."""

_STRING_LITERAL: Final = re.compile(
    r"""[rRbB]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')"""
)
_BINDERS: Final = re.compile(
    r"\.\s*(?:all|exists|exists_one|existsOne|map|filter|transformList|transformMap|"
    r"transformMapEntry)\s*\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)


class ConditionError(Exception):
    """A condition failed to evaluate (missing key, type error, non-boolean result, ...)."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A compiled CEL condition.

    Attributes:
        source: The expression as written.
        variables: The allowed top-level names it reads (subset of ``ALLOWED_VARIABLES``).
    """

    source: str
    variables: frozenset[str]
    _program: Any

    def evaluate(self, context: Any) -> bool:
        """Run in a ``cel.Context``; failures and non-boolean results raise `ConditionError`."""
        try:
            result = self._program.execute(context)
        except KeyError as exc:
            key = exc.args[0] if exc.args else "?"
            raise ConditionError(f"no such key {key!r} (guard it with has())") from None
        except Exception as exc:  # fail closed on every CEL runtime error
            raise ConditionError(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(result, bool):
            raise ConditionError(f"condition returned {type(result).__name__}, not a bool")
        return result


def _bound_names(source: str) -> set[str]:
    """Names bound by macros (``roles.exists(r, ...)``), which ``cel`` reports as free."""
    names: set[str] = set()
    for match in _BINDERS.finditer(_STRING_LITERAL.sub('""', source)):
        names.update(name for name in match.groups() if name)
    return names


@lru_cache(maxsize=8192)
def compile_condition(source: str) -> Condition:
    """Compile and check a condition; results are cached, so validation and compilation share them.

    Raises:
        ValueError: On a syntax error or a variable outside ``ALLOWED_VARIABLES``.
    """
    if not source.strip():
        raise ValueError("empty CEL expression")
    try:
        program = cel.compile(source)
    except Exception as exc:  # the binding raises ValueError, but be safe about its other errors
        raise ValueError(f"CEL does not compile: {_compile_message(exc)}") from None
    variables = frozenset(program.variables())
    unknown = sorted(variables - ALLOWED_VARIABLES - _bound_names(source))
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        allowed = ", ".join(sorted(ALLOWED_VARIABLES))
        raise ValueError(f"unknown CEL variable {names} (allowed: {allowed})")
    return Condition(source, variables & ALLOWED_VARIABLES, program)


def condition_problem(source: str) -> str | None:
    """Why ``source`` is not a valid condition, or None when it is."""
    try:
        compile_condition(source)
    except ValueError as exc:
        return str(exc)
    return None


def _compile_message(exc: Exception) -> str:
    """The parser's own message, without the echo of the whole expression."""
    text = str(exc) or type(exc).__name__
    _, marker, detail = text.rpartition("ERROR: ")
    return (detail if marker else text).splitlines()[0].removeprefix("<input>:")


def _tool_value(tool: ToolDef) -> dict[str, Any]:
    return {
        "name": tool.name,
        "server": tool.server,
        "upstream_name": tool.upstream_name,
        "annotations": dict(tool.annotations or {}),
    }


def _principal_value(principal: Principal) -> dict[str, Any]:
    return {"id": principal.id, "roles": sorted(principal.roles), "claims": dict(principal.claims)}


def build_context(
    needed: frozenset[str],
    tool: ToolDef,
    args: Mapping[str, Any] | None,
    principal: Principal,
    session: SessionState | None,
) -> Any:
    """A ``cel.Context`` with the ``needed`` variables only (conversion to CEL is the cost).

    Raises:
        ConditionError: When a value cannot be converted to CEL.
    """
    variables: dict[str, Any] = {}
    if "tool" in needed:
        variables["tool"] = _tool_value(tool)
    if "args" in needed:
        variables["args"] = args if isinstance(args, dict) else dict(args or {})
    if "principal" in needed:
        variables["principal"] = _principal_value(principal)
    if "session" in needed:
        variables["session"] = (session or SessionState("")).cel_value()
    try:
        return cel.Context(variables)
    except Exception as exc:  # unconvertible argument values fail closed too
        raise ConditionError(f"{type(exc).__name__}: {exc}") from None
