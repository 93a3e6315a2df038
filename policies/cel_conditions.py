"""CEL ``when`` / ``unless`` conditions: compiled once, checked at load, evaluated fail-closed."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from policies.errors import ConditionError

__all__ = [
    "ALLOWED_VARIABLES",
    "Condition",
    "Needs",
    "compile_condition",
    "condition_problem",
]

ALLOWED_VARIABLES: Final = frozenset({"tool", "args", "principal", "session", "resource", "prompt"})
"""The only names a condition may read (``resource`` and ``prompt`` in rules over those only)."""

_STRING_LITERAL: Final = re.compile(
    r"""[rRbB]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')"""
)
_REFERENCE: Final = re.compile(r"(?<![\w.])(tool|args|principal|session|resource|prompt)\b")
_FIELD_ACCESS: Final = re.compile(r"\s*\.\s*([A-Za-z_]\w*)\b\s*(\()?")
_BINDERS: Final = re.compile(
    r"\.\s*(?:all|exists|exists_one|existsOne|map|filter|transformList|transformMap|"
    r"transformMapEntry)\s*\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?"
)

_CALL: Final = re.compile(r"(\.\s*)?\b([A-Za-z_]\w*)\s*\(")
_METHODS: Final = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches",
        "all", "exists", "exists_one", "existsOne", "map", "filter",
        "getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
        "getHours", "getMinutes", "getSeconds", "getMilliseconds",
    }
)  # fmt: skip
"""Functions called on a value (``x.startsWith("a")``) that the ``cel`` binding defines."""
_FUNCTIONS: Final = frozenset(
    {"size", "has", "int", "uint", "double", "string", "bytes", "duration", "timestamp", "type",
     "dyn"}
)  # fmt: skip
"""Functions called on their own (``int(x)``) that the ``cel`` binding defines."""


Needs = Mapping[str, frozenset[str] | None]
"""Per variable, the first-level fields a condition reads, or None when it reads the whole value."""


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """A compiled CEL condition.

    Attributes:
        source: The expression as written.
        variables: The allowed top-level names it reads (subset of ``ALLOWED_VARIABLES``).
        needs: The fields of each variable it reads, so only those are converted to CEL.
    """

    source: str
    variables: frozenset[str]
    needs: Needs
    _program: Any

    def evaluate(self, context: Any, memo: dict[Condition, bool]) -> bool:
        """Run in a ``cel.Context``; failures and non-boolean results raise `ConditionError`.

        ``memo`` holds results already computed in the same context: rules often share a
        condition (identical sources compile to the same `Condition`).
        """
        known = memo.get(self)
        if known is not None:
            return known
        try:
            result = self._program.execute(context)
        except KeyError as exc:
            key = exc.args[0] if exc.args else "?"
            raise ConditionError(f"no such key {key!r} (guard it with has())") from None
        except Exception as exc:  # fail closed on every CEL runtime error
            raise ConditionError(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(result, bool):
            raise ConditionError(f"condition returned {type(result).__name__}, not a bool")
        memo[self] = result
        return result


def _bound_names(source: str) -> set[str]:
    """Names bound by macros (``roles.exists(r, ...)``), which ``cel`` reports as free."""
    names: set[str] = set()
    for match in _BINDERS.finditer(_STRING_LITERAL.sub('""', source)):
        names.update(name for name in match.groups() if name)
    return names


def referenced_fields(source: str, variables: frozenset[str]) -> Needs:
    """Which first-level fields of each variable ``source`` reads (``args.path`` -> ``path``).

    Conservative: any other use of a variable (``args["k"]``, ``size(args)``, ``args.?k``, a
    method call, a comment in the source) means the whole value is needed. Pruning only ever
    drops fields the expression cannot observe.
    """
    if "//" in source:
        return dict.fromkeys(variables)
    stripped = _STRING_LITERAL.sub('""', source)
    found: dict[str, set[str] | None] = {name: set() for name in variables}
    for match in _REFERENCE.finditer(stripped):
        name, fields = match.group(1), found.get(match.group(1))
        if fields is None:
            continue
        access = _FIELD_ACCESS.match(stripped, match.end())
        if access is None or access.group(2):
            found[name] = None
        else:
            fields.add(access.group(1))
    return {n: frozenset(f) if f else None for n, f in found.items()}


@lru_cache(maxsize=8192)
def compile_condition(source: str) -> Condition:
    """Compile and check a condition; results are cached, so validation and compilation share them.

    Raises:
        ValueError: On a syntax error or a variable outside ``ALLOWED_VARIABLES``.
    """
    if not source.strip():
        raise ValueError("empty CEL expression")
    import cel  # here, not at the top: the binding imports a CLI toolkit (~20% of a start)

    try:
        program = cel.compile(source)
    except Exception as exc:  # the binding raises ValueError, but be safe about its other errors
        hint = _unclosed_string(source)
        raise ValueError(f"CEL does not compile: {hint or _compile_message(exc)}") from None
    variables = frozenset(program.variables())
    unknown = sorted(variables - ALLOWED_VARIABLES - _bound_names(source))
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        allowed = ", ".join(sorted(ALLOWED_VARIABLES))
        raise ValueError(f"unknown CEL variable {names} (allowed: {allowed})")
    if (problem := _call_problem(source)) is not None:
        raise ValueError(problem)
    variables &= ALLOWED_VARIABLES
    return Condition(source, variables, referenced_fields(source, variables), program)


def _call_problem(source: str) -> str | None:
    """The first call to a function CEL does not have, or has only in the other form (as a
    method or on its own): such a condition would fail closed, denying every call it meets."""
    for match in _CALL.finditer(_STRING_LITERAL.sub('""', source)):
        method, name = match.group(1) is not None, match.group(2)
        known, other = (_METHODS, _FUNCTIONS) if method else (_FUNCTIONS, _METHODS)
        if name in known:
            continue
        if name in other:
            usage = "x.{0}(...), not {0}(x, ...)" if name in _METHODS else "{0}(x), not x.{0}()"
            kind = "a method" if name in _METHODS else "a function"
            return f"{name!r} is {kind} in CEL: write {usage.format(name)}"
        close = difflib.get_close_matches(name, sorted(_METHODS | _FUNCTIONS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown CEL function {name!r}{hint}"
    return None


def condition_problem(source: str) -> str | None:
    """Why ``source`` is not a valid condition, or None when it is."""
    try:
        compile_condition(source)
    except ValueError as exc:
        return str(exc)
    return None


def _unclosed_string(source: str) -> str | None:
    """A plain explanation when a string literal is never closed (the parser only says
    ``mismatched input '<EOF>'``)."""
    quote: str | None = None
    opened = 0
    escaped = False
    for index, char in enumerate(source):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote, opened = char, index
    if quote is None:
        return None
    return f"the string opened with {quote} at column {opened + 1} is never closed"


def _compile_message(exc: Exception) -> str:
    """The parser's own message, without the echo of the whole expression."""
    text = str(exc) or type(exc).__name__
    _, marker, detail = text.rpartition("ERROR: ")
    return (detail if marker else text).splitlines()[0].removeprefix("<input>:")
