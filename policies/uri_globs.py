"""URI globs for resource rules, and the normal form of a URI that rules are matched against.

URI globs: ``*`` matches any run of characters, ``/`` included (``file:///etc/*`` covers
``file:///etc/ssl/cert.pem``); ``?`` matches one character; ``\\*``, ``\\?`` and ``\\\\`` are a
literal ``*``, ``?`` and backslash; everything else matches itself, case-sensitively, and the
glob must match the whole URI. A read is decided on every form an upstream may resolve its URI
to (see `uri_forms`): as sent, its normal form, and its normal form once fully percent-decoded;
the most restrictive decision wins, so neither ``file:///tmp/../etc/passwd``, ``FILE:///etc/passwd``
nor ``file:///srv/..%2F..%2Fetc/passwd`` slips past a rule on ``file:///etc/*``, and
``file:///public/../etc/passwd`` does not pass an allow-list on ``file:///public/*``. A URI whose
decoding is ambiguous (an escape that decodes to another escape, to ``?`` or ``#``, to a control
character, or to bytes that are not UTF-8) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Final
from urllib.parse import unquote

from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from policies.matchers import StrMatcher

__all__ = ["UriGlob", "compile_uri_globs", "normalize_uri", "uri_forms", "uri_glob_problem"]

_URI_MAX: Final = 2048


def _uri_regex(pattern: str) -> str:
    """The regex of a URI glob (see the module docstring)."""
    out: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped not in ("*", "?", "\\"):
                raise ValueError("'\\' escapes only '*', '?' and '\\'")
            out.append(re.escape(escaped))
        elif char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    return "".join(out)


def uri_glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid URI glob, or None when it is."""
    if not pattern:
        return "invalid URI glob '': empty pattern"
    if len(pattern) > _URI_MAX or any(c.isspace() or ord(c) < 0x20 for c in pattern):
        return f"invalid URI glob {pattern!r}: no whitespace or control characters, at most 2048"
    try:
        _uri_regex(pattern)
    except ValueError as exc:
        return f"invalid URI glob {pattern!r}: {exc}"
    return None


def _valid_uri_glob(pattern: str) -> str:
    problem = uri_glob_problem(pattern)
    if problem is not None:
        raise PydanticCustomError("uri_glob", problem)
    return pattern


UriGlob = Annotated[
    str,
    AfterValidator(_valid_uri_glob),
    Field(
        description=(
            "Glob on the upstream's original resource URI or URI template: '*' matches any "
            "characters, '/' included; '?' one; '\\*', '\\?' and '\\\\' are literal."
        ),
        json_schema_extra={"pattern": r"^\S+$"},
    ),
]


def compile_uri_globs(patterns: Iterable[str]) -> StrMatcher:
    """A matcher accepting a URI that one of ``patterns`` (valid URI globs) matches whole."""
    fullmatch = re.compile("|".join(f"(?:{_uri_regex(p)})" for p in patterns), re.DOTALL).fullmatch
    return lambda uri: fullmatch(uri) is not None


_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_PERCENT: Final = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _percent(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on a path starting with ``/``; empty segments collapse too."""
    kept: list[str] = []
    segments = path.split("/")[1:]
    for segment in segments:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in (".", ""):
            kept.append(segment)
    trailing = segments[-1] in ("", ".", "..") and bool(kept)
    return "/" + "/".join(kept) + ("/" if trailing else "")


def normalize_uri(uri: str) -> str:
    """The form of ``uri`` rules are matched against as well: scheme and host in lower case,
    percent-escapes of unreserved characters decoded (others upper-cased), and in a path
    starting with ``/`` the ``.`` and ``..`` segments resolved and repeated ``/`` collapsed;
    ``file:/p`` and ``file://localhost/p`` are ``file:///p`` (RFC 8089). Query and fragment are
    kept as they are."""
    found = _SCHEME.match(uri)
    if found is None:
        return uri
    scheme, rest = found.group(1).lower(), uri[found.end() :]
    rest, hash_, fragment = rest.partition("#")
    rest, query, params = rest.partition("?")
    authority = ""
    if rest.startswith("//"):
        end = rest.find("/", 2)
        authority, rest = (rest, "") if end < 0 else (rest[:end], rest[end:])
        user, at, host = authority.rpartition("@")
        authority = user + at + host.lower()
    path = _PERCENT.sub(_percent, rest)
    if path.startswith("/"):
        path = _dot_segments(path)
        if scheme == "file" and authority in ("", "//localhost"):
            authority = "//"
    return f"{scheme}:{authority}{path}{query}{params}{hash_}{fragment}"


_STRUCTURAL: Final = re.compile(r"%(?:3[fF]|23)")
"""Escapes of ``?`` and ``#``: decoded, they would move the boundary of the path."""


def uri_forms(uri: str) -> tuple[str, ...] | None:
    """Every form an upstream may resolve ``uri`` to: its normal form, as sent, and, when it
    holds percent-escapes, the normal form of it decoded once and fully (``%2F`` too, as the
    common ``Path(unquote(urlparse(uri).path))`` reads it). None when that decoding is ambiguous:
    a rule cannot know what the upstream will read, so the URI is refused."""
    forms = dict.fromkeys((normalize_uri(uri), uri))
    if "%" in uri and _SCHEME.match(uri) is not None:
        if _STRUCTURAL.search(uri):
            return None
        try:
            decoded = unquote(uri, errors="strict")
        except UnicodeDecodeError:
            return None
        if _PERCENT.search(decoded) or any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded):
            return None
        forms.update(dict.fromkeys((decoded, normalize_uri(decoded))))
    return tuple(forms)
