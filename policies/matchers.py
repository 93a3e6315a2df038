"""Precompiled plain-Python matchers for tool-name globs and principal lists."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from toolsets.context import Principal

__all__ = [
    "PrincipalMatcher",
    "StrMatcher",
    "compile_glob",
    "compile_globs",
    "compile_principals",
    "glob_problem",
    "is_literal",
    "principal_entry_problem",
]

StrMatcher = Callable[[str], bool]

_NAME_CHAR: Final = re.compile(r"[A-Za-z0-9_-]")
_GLOB_CHARS: Final = frozenset("*?[")
ROLE_PREFIX: Final = "role:"


def is_literal(pattern: str) -> bool:
    """True when ``pattern`` has no glob metacharacters."""
    return not _GLOB_CHARS.intersection(pattern)


def _class(pattern: str, start: int) -> tuple[str, int]:
    """Translate the ``[...]`` class at ``start``; return its regex and the index after it."""
    end = pattern.find("]", start + 2 if pattern[start + 1 : start + 2] == "!" else start + 1)
    if end < 0:
        raise ValueError("unclosed '['")
    body = pattern[start + 1 : end]
    negate = body.startswith("!")
    body = body[1:] if negate else body
    if not body:
        raise ValueError("empty character class '[]'")
    for char in body:
        if char != "-" and not _NAME_CHAR.fullmatch(char):
            raise ValueError(f"character {char!r} in a class can never match a tool name")
    return ("[^" if negate else "[") + body + "]", end + 1


def _translate(pattern: str) -> str:
    if not pattern:
        raise ValueError("empty pattern")
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            if not out or out[-1] != ".*":
                out.append(".*")
            index += 1
        elif char == "?":
            out.append(".")
            index += 1
        elif char == "[":
            regex, index = _class(pattern, index)
            out.append(regex)
        elif _NAME_CHAR.fullmatch(char):
            out.append(re.escape(char))
            index += 1
        else:
            raise ValueError(
                f"character {char!r} can never match a name "
                "(names use letters, digits, '_' and '-'; globs add '*', '?' and '[...]')"
            )
    return "".join(out)


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid name glob, or None when it is."""
    try:
        re.compile(_translate(pattern))
    except (ValueError, re.error) as exc:
        return f"invalid glob {pattern!r}: {exc}"
    return None


def compile_glob(pattern: str) -> StrMatcher:
    """A matcher for one valid name glob (``*``, ``?``, ``[abc]``, ``[!a-z]``)."""
    if is_literal(pattern):
        return pattern.__eq__
    if pattern == "*":
        return lambda _name: True
    fullmatch = re.compile(_translate(pattern)).fullmatch
    return lambda name: fullmatch(name) is not None


def compile_globs(patterns: Iterable[str]) -> StrMatcher:
    """A matcher that accepts a name matching any of ``patterns``."""
    literals = frozenset(p for p in patterns if is_literal(p))
    globs = [p for p in patterns if not is_literal(p)]
    if "*" in globs:
        return lambda _name: True
    if not globs:
        return literals.__contains__
    fullmatch = re.compile("|".join(f"(?:{_translate(p)})" for p in globs)).fullmatch
    return lambda name: name in literals or fullmatch(name) is not None


def principal_entry_problem(entry: str) -> str | None:
    """Why ``entry`` is not a valid ``principals`` entry, or None when it is."""
    body = entry.removeprefix("!")
    if not body or body != body.strip() or any(c.isspace() for c in body):
        return f"invalid principal entry {entry!r}: expected an id, 'role:NAME' or a '!' negation"
    if body.startswith(ROLE_PREFIX) and not body.removeprefix(ROLE_PREFIX):
        return f"invalid principal entry {entry!r}: role name is empty"
    return None


@dataclass(frozen=True, slots=True)
class _PrincipalSet:
    ids: frozenset[str]
    roles: frozenset[str]
    id_globs: tuple[Callable[[str], re.Match[str] | None], ...]

    @classmethod
    def of(cls, entries: Iterable[str]) -> _PrincipalSet:
        ids: set[str] = set()
        roles: set[str] = set()
        globs: list[Callable[[str], re.Match[str] | None]] = []
        for entry in entries:
            if entry.startswith(ROLE_PREFIX):
                roles.add(entry.removeprefix(ROLE_PREFIX))
            elif "*" not in entry and "?" not in entry:
                ids.add(entry)
            else:
                globs.append(re.compile(_principal_regex(entry)).fullmatch)
        return cls(frozenset(ids), frozenset(roles), tuple(globs))

    def __bool__(self) -> bool:
        return bool(self.ids or self.roles or self.id_globs)

    def contains(self, principal: Principal) -> bool:
        return (
            principal.id in self.ids
            or not self.roles.isdisjoint(principal.roles)
            or any(match(principal.id) is not None for match in self.id_globs)
        )


def _principal_regex(pattern: str) -> str:
    """Principal ids are free-form; only ``*`` and ``?`` are special in their globs."""
    return "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)


PrincipalMatcher = Callable[[Principal], bool]


def compile_principals(entries: Iterable[str]) -> PrincipalMatcher:
    """A matcher for a ``principals`` list.

    Positive entries (ids, id globs with ``*``/``?``, ``role:NAME``) match when any applies, or
    always when there are none; a matching ``!`` entry excludes the principal.
    """
    entries = list(entries)
    include = _PrincipalSet.of(e for e in entries if not e.startswith("!"))
    exclude = _PrincipalSet.of(e[1:] for e in entries if e.startswith("!"))
    if not exclude:
        return include.contains
    if not include:
        return lambda principal: not exclude.contains(principal)
    return lambda principal: include.contains(principal) and not exclude.contains(principal)
