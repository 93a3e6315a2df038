"""Rules over resources and prompts: URI globs, URI normalisation, and what such a rule may say.

A rule names one kind of thing: ``tools`` (or neither ``resources`` nor ``prompts``: tool rules,
as before), ``resources`` (globs on the upstream's original resource URI or URI template) or
``prompts`` (name globs on exposed prompt names, ``{prefix}__{name}``).

URI globs: ``*`` matches any run of characters, ``/`` included (``file:///etc/*`` covers
``file:///etc/ssl/cert.pem``); ``?`` matches one character; ``\\*``, ``\\?`` and ``\\\\`` are a
literal ``*``, ``?`` and backslash; everything else matches itself, case-sensitively, and the
glob must match the whole URI. A read is decided twice when its URI is not in normal form (see
`normalize_uri`): on the URI as sent and on its normal form; the more restrictive decision wins,
so neither ``file:///tmp/../etc/passwd`` nor ``FILE:///etc/passwd`` slips past a rule on
``file:///etc/*``, and neither ``file:///public/../etc/passwd`` passes an allow-list on
``file:///public/*``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from policies.cel_conditions import compile_condition
from policies.matchers import StrMatcher, compile_globs
from toolsets.decision import EFFECT_RANK, ApprovalOptions, Decision, Effect

__all__ = [
    "DEFAULT_SURFACE_EFFECT",
    "SCOPED_FIELDS",
    "SURFACE_EFFECTS",
    "SURFACE_VARIABLES",
    "PromptEffect",
    "ResourceEffect",
    "SurfaceKind",
    "SurfaceSelector",
    "UriGlob",
    "check_scope",
    "compile_uri_globs",
    "normalize_uri",
    "rule_kind",
    "scope_problem",
    "surface_defaults",
    "surface_selector",
    "uri_glob_problem",
]

SurfaceKind = Literal["resources", "prompts"]
"""What a surface rule matches: resource URIs (and templates) or exposed prompt names."""

RuleKind = Literal["tools", "resources", "prompts"]
ResourceEffect = Literal["allow", "ask", "deny", "hide"]
"""The effects of a rule (or ``defaults.resources``) over resources."""
PromptEffect = Literal["allow", "deny", "hide"]
"""The effects of a rule (or ``defaults.prompts``) over prompts: a prompt get is never held."""

SURFACE_EFFECTS: Final[Mapping[SurfaceKind, tuple[Effect, ...]]] = {
    "resources": ("allow", "ask", "deny", "hide"),
    "prompts": ("allow", "deny", "hide"),
}
"""The effects a rule (or default) over each kind may have."""

SURFACE_VARIABLES: Final[Mapping[RuleKind, frozenset[str]]] = {
    "tools": frozenset({"tool", "args", "principal", "session"}),
    "resources": frozenset({"resource", "principal", "session"}),
    "prompts": frozenset({"prompt", "args", "principal", "session"}),
}
"""The CEL variables the conditions of each kind of rule may read."""

DEFAULT_SURFACE_EFFECT: Final[Effect] = "allow"
"""The effect for resources and prompts no rule matches, unless ``defaults`` says otherwise."""

_TOOL_ONLY: Final = ("accept_flags", "unlock_after", "lock_after", "require_first")
SCOPED_FIELDS: Final = (
    *("resources", "prompts", "when", "unless", "effect", "approval", "redact"),
    *_TOOL_ONLY,
)
"""The rule fields `check_scope` validates (each after the selectors it depends on)."""
_RESOURCE_DECISIONS: Final = frozenset({"approve", "deny"})
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


@dataclass(frozen=True, slots=True)
class SurfaceSelector:
    """The ``resources`` or ``prompts`` selector of a rule.

    Attributes:
        kind: What it matches.
        patterns: The globs as written.
        match: Whether a URI (or template) or an exposed prompt name matches one of them.
    """

    kind: SurfaceKind
    patterns: tuple[str, ...]
    match: StrMatcher


def surface_selector(
    resources: Sequence[str] | None, prompts: Sequence[str] | None
) -> SurfaceSelector | None:
    """The selector of a rule with these (validated) lists; None for a tool rule."""
    if resources is not None:
        return SurfaceSelector("resources", tuple(resources), compile_uri_globs(resources))
    if prompts is not None:
        return SurfaceSelector("prompts", tuple(prompts), compile_globs(prompts))
    return None


def rule_kind(data: Mapping[str, Any]) -> RuleKind:
    """What a rule's (already validated) fields make it match."""
    if data.get("resources") is not None:
        return "resources"
    if data.get("prompts") is not None:
        return "prompts"
    return "tools"


def _condition_problem(kind: RuleKind, source: str) -> str | None:
    allowed = SURFACE_VARIABLES[kind]
    wrong = sorted(compile_condition(source).variables - allowed)
    if not wrong:
        return None
    names = ", ".join(repr(name) for name in wrong)
    readable = ", ".join(sorted(allowed))
    return f"a rule over {kind} cannot read {names} in conditions (it may read {readable})"


def _approval_problem(kind: RuleKind, approval: Any) -> str | None:
    if kind == "prompts":
        return "prompts are never held for approval: remove approval"
    if kind == "resources":
        decisions = getattr(approval, "decisions", None) or []
        if not _RESOURCE_DECISIONS.issuperset(decisions):
            return "a resource read can only be approved or denied: decisions [approve, deny]"
        if "caller" in (getattr(approval, "approvers", None) or []):
            return (
                "a resource read is decided by approvers (REST API, page, CLI), never asked of "
                "the caller: use role:NAME or user:ID"
            )
    return None


def _effect_problem(kind: RuleKind, effect: str) -> str | None:
    if kind == "tools" or effect in SURFACE_EFFECTS[kind]:
        return None
    if kind == "prompts":
        return (
            f"effect {effect!r} is not for prompts: a prompt get is never held "
            "(use allow, deny or hide)"
        )
    return f"effect {effect!r} is not for resources (use allow, ask, deny or hide)"


def scope_problem(field: str, value: Any, data: Mapping[str, Any]) -> str | None:
    """What is wrong with a rule's ``field`` set to ``value``, given the fields validated before
    it (``data``): a rule matches one kind of thing, and says only what applies to it."""
    kind = rule_kind(data)
    if field in ("resources", "prompts"):
        named = [key for key in ("tools", "resources") if data.get(key) is not None]
        if named:
            return (
                f"a rule matches tools, resources or prompts, not several: this one names "
                f"{named[0]} and {field} (split it into one rule per kind)"
            )
        return None
    if field in ("when", "unless"):
        return _condition_problem(kind, value)
    if field == "effect":
        return _effect_problem(kind, value)
    if field == "approval":
        return _approval_problem(kind, value)
    if kind == "resources" and field == "redact":
        return "a resource read has no arguments to redact: remove redact"
    if kind != "tools" and field in _TOOL_ONLY:
        return f"{field} applies to tool rules only, and this rule names {kind}"
    return None


def check_scope(value: Any, info: ValidationInfo) -> Any:
    """A pydantic field validator of the rule model: see `scope_problem`."""
    problem = scope_problem(info.field_name or "", value, info.data)
    if problem is not None:
        raise PydanticCustomError("rule_kind", problem)
    return value


def _default(kind: SurfaceKind, effect: Effect, approval: ApprovalOptions) -> Decision:
    noun = "resource" if kind == "resources" else "prompt"
    reason = f"no {noun} rule matched; defaults.{kind} is {effect!r}"
    return Decision(effect=effect, rule_id=None, reason=reason, approval=approval)


def surface_defaults(
    defaults: Sequence[Any], approval: ApprovalOptions
) -> dict[SurfaceKind, Decision]:
    """The decision for resources and prompts no rule matches: per kind the most restrictive of
    the files' ``defaults.resources`` / ``defaults.prompts`` (``defaults``: the files' defaults
    models, in layer order), else `DEFAULT_SURFACE_EFFECT`."""
    decisions: dict[SurfaceKind, Decision] = {}
    for kind in SURFACE_EFFECTS:
        effects = [e for d in defaults if (e := getattr(d, kind, None)) is not None]
        winner = max(effects or [DEFAULT_SURFACE_EFFECT], key=EFFECT_RANK.__getitem__)
        decisions[kind] = _default(kind, winner, approval)
    return decisions
