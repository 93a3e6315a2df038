"""Redaction: argument paths named by policy and credential-looking values are masked."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Final

__all__ = [
    "CREDENTIAL_PATTERNS",
    "MASK",
    "SENSITIVE_KEYS",
    "mask_credentials",
    "mask_values",
    "redact",
    "values_at",
]

MASK: Final = "[REDACTED]"
MEMO_MIN: Final = 1024
"""Strings at least this long are masked once per `redact` call, however often they recur
(the first `MEMO_ITEMS` distinct ones)."""
MEMO_ITEMS: Final = 8

SENSITIVE_KEYS: Final = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "clientsecret",
        "apikey",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "authorization",
        "proxyauthorization",
        "privatekey",
        "cookie",
        "setcookie",
    }
)
"""Keys whose values are masked wherever they appear (compared lower-case without ``-``/``_``)."""

_CREDENTIALS: Final = tuple(
    (re.compile(pattern, re.DOTALL), replacement, frozenset(literal))
    for literal, pattern, replacement in (
        (
            "-----BEGIN PRIVATE KEY-----",
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            MASK,
        ),
        ("Bearer ", r"Bearer [A-Za-z0-9\-._~+/]{8,}=*", f"Bearer {MASK}"),
        ("bearer ", r"bearer [A-Za-z0-9\-._~+/]{8,}=*", f"bearer {MASK}"),
        ("sk-", r"sk-(?:[a-z]+-)?[A-Za-z0-9_\-]{16,}", MASK),
        ("gh_", r"gh[pousr]_[A-Za-z0-9]{20,}", MASK),
        ("github_pat_", r"github_pat_[A-Za-z0-9_]{20,}", MASK),
        ("AIA", r"A[KS]IA[0-9A-Z]{16}", MASK),
        ("xox-", r"xox[abposr]-[A-Za-z0-9\-]{10,}", MASK),
        ("AIza", r"AIza[0-9A-Za-z_\-]{35}", MASK),
        ("eyJ.", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", MASK),
        ("/connect/v1.", r"/connect/v1\.[A-Za-z0-9_\-]{16,}", f"/connect/{MASK}"),
    )
)
"""PEM private keys, bearer tokens, ``sk-`` keys (OpenAI, Anthropic), GitHub, AWS, Slack and Google
keys, JWTs, lockgate's connect links (`gateway.connect`). Each pattern starts with a literal so
`re` scans for it quickly (one alternation would be ~10x slower); only the matching part is
masked, so the surrounding text stays readable.

The third member is a set of characters every match contains: a text lacking one of them cannot
match, so a text is scanned only by the patterns it could match. A long text is asked for each
character with `str.__contains__` (``memchr``: some 40x faster than a pattern's own scan); a short
one is made a set once and compared with each pattern's (cheaper than calling ten scans)."""
CREDENTIAL_PATTERNS: Final = tuple(entry[0] for entry in _CREDENTIALS)
"""The credential patterns alone (the built-in content inspector's ``credential`` detector)."""
_SHORTEST: Final = 14
"""No credential above is shorter; shorter strings are not scanned."""
_SET_MAX: Final = 256
"""Strings up to this long are pre-checked as a set of characters, longer ones by ``memchr``."""

_Path = tuple[str, ...]
_Memo = list[tuple[str, str]]


def mask_credentials(text: str) -> str:
    """``text`` with every credential-looking substring replaced by `MASK`."""
    size = len(text)
    if size < _SHORTEST:
        return text
    if size <= _SET_MAX:
        present = set(text)
        for pattern, replacement, needs in _CREDENTIALS:
            if needs <= present and pattern.search(text):
                text = pattern.sub(replacement, text)
        return text
    for pattern, replacement, needs in _CREDENTIALS:
        if all(char in text for char in needs) and pattern.search(text):
            text = pattern.sub(replacement, text)
    return text


def redact(value: Any, paths: Iterable[str] = (), *, root: str = "args") -> Any:
    """A redacted copy of ``value`` (the input is never changed).

    Args:
        value: JSON-like data (mappings, lists, scalars).
        paths: Dotted paths as written in policies, relative to ``root``: ``args.token``,
            ``args.headers.authorization``; ``*`` matches any key or list item, a number a list
            index, and keys compare case-insensitively. Paths under another root are ignored.
        root: The name ``value`` has in ``paths``.

    Returns:
        The data with the addressed values, values under `SENSITIVE_KEYS` and credential-looking
        substrings masked.
    """
    return _walk(value, _compile(tuple(paths), root), [])


@lru_cache(maxsize=256)
def _compile(paths: tuple[str, ...], root: str) -> tuple[_Path, ...]:
    prefix = root + "."
    return tuple(
        tuple(part.lower() for part in path[len(prefix) :].split("."))
        for path in paths
        if path.startswith(prefix) and len(path) > len(prefix)
    )


_SCALARS: Final = frozenset({int, float, bool, type(None)})


def _walk(value: Any, paths: tuple[_Path, ...], memo: _Memo) -> Any:
    kind = type(value)  # exact types first: the abstract checks below cost more
    if kind in _SCALARS:
        return value
    if kind is str:
        return _text(value, memo)
    if kind is dict:
        return {key: _child(key, item, paths, memo) for key, item in value.items()}
    if kind is not list and kind is not tuple:
        if isinstance(value, str):
            return _text(value, memo)
        if isinstance(value, Mapping):
            return {key: _child(key, item, paths, memo) for key, item in value.items()}
        if not isinstance(value, list | tuple):
            return value
    return [_child(str(index), item, paths, memo) for index, item in enumerate(value)]


def _text(value: str, memo: _Memo) -> str:
    if len(value) < MEMO_MIN:
        return mask_credentials(value)
    # A result's text is often in content and structuredContent too (equal, not the same
    # object). Compared, not hashed: hashing 256 KiB costs more than masking it when no pattern
    # can match, and a comparison stops at the first difference.
    for seen, masked in memo:
        if seen is value or seen == value:
            return masked
    masked = mask_credentials(value)
    if len(memo) < MEMO_ITEMS:
        memo.append((value, masked))
    return masked


def _child(key: Any, item: Any, paths: tuple[_Path, ...], memo: _Memo) -> Any:
    name = key.lower() if type(key) is str else str(key).lower()
    if name.replace("_", "").replace("-", "") in SENSITIVE_KEYS:
        return MASK
    if not paths:
        return _walk(item, paths, memo)
    rest: list[_Path] = []
    for path in paths:
        if path[0] in ("*", name):
            if len(path) == 1:
                return MASK
            rest.append(path[1:])
    return _walk(item, tuple(rest), memo)


_SHORTEST_VALUE: Final = 4
"""Redacted values shorter than this are not searched for elsewhere (too many false hits)."""


def values_at(value: Any, paths: Iterable[str], *, root: str = "args") -> tuple[str, ...]:
    """The strings `redact` would mask along ``paths`` (everything under a masked node).

    Longest first, so `mask_values` replaces a value before any value it contains.
    """
    found: set[str] = set()
    _collect(value, _compile(tuple(paths), root), found, masked=False)
    return tuple(sorted((v for v in found if len(v) >= _SHORTEST_VALUE), key=len, reverse=True))


def _collect(value: Any, paths: tuple[_Path, ...], found: set[str], *, masked: bool) -> None:
    if isinstance(value, str):
        if masked:
            found.add(value)
        return
    if isinstance(value, Mapping):
        items: Iterable[tuple[str, Any]] = ((str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return
    for key, item in items:
        name = key.lower()
        rest = [p[1:] for p in paths if p[0] in ("*", name)]
        hit = masked or any(len(p) == 0 for p in rest)
        _collect(item, tuple(p for p in rest if p), found, masked=hit)


def mask_values(value: Any, secrets: Iterable[str]) -> Any:
    """A copy of ``value`` with every occurrence of each of ``secrets`` in its strings masked."""
    ordered = tuple(secrets)
    if not ordered:
        return value
    if isinstance(value, str):
        for secret in ordered:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, Mapping):
        return {key: mask_values(item, ordered) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_values(item, ordered) for item in value]
    return value
