"""Rules over resources and prompts: what such a rule may say, its selector and the defaults.

A rule names one kind of thing: ``tools`` (or neither ``resources`` nor ``prompts``: tool rules,
as before), ``resources`` (globs on the upstream's original resource URI or URI template) or
``prompts`` (name globs on exposed prompt names, ``{prefix}__{name}``).

URI globs and the normal form of URIs are in `policies.uri_globs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import ValidationInfo
from pydantic_core import PydanticCustomError

from policies.cel_conditions import compile_condition
from policies.matchers import StrMatcher, compile_globs
from policies.uri_globs import compile_uri_globs
from toolsets.decision import EFFECT_RANK, ApprovalOptions, Decision, Effect

__all__ = [
    "DEFAULT_RESOURCE_EFFECT",
    "KIND_EFFECTS",
    "KIND_VARIABLES",
    "SCOPED_FIELDS",
    "PromptEffect",
    "ResourceEffect",
    "ResourceKind",
    "ResourceSelector",
    "check_scope",
    "resource_defaults",
    "resource_selector",
    "rule_kind",
    "scope_problem",
]

ResourceKind = Literal["resources", "prompts"]
"""What a resource or prompt rule matches: resource URIs (and templates) or exposed prompt names."""

RuleKind = Literal["tools", "resources", "prompts"]
ResourceEffect = Literal["allow", "ask", "deny", "hide"]
"""The effects of a rule (or ``defaults.resources``) over resources."""
PromptEffect = Literal["allow", "deny", "hide"]
"""The effects of a rule (or ``defaults.prompts``) over prompts: a prompt get is never held."""

KIND_EFFECTS: Final[Mapping[ResourceKind, tuple[Effect, ...]]] = {
    "resources": ("allow", "ask", "deny", "hide"),
    "prompts": ("allow", "deny", "hide"),
}
"""The effects a rule (or default) over each kind may have."""

KIND_VARIABLES: Final[Mapping[RuleKind, frozenset[str]]] = {
    "tools": frozenset({"tool", "args", "principal", "session"}),
    "resources": frozenset({"resource", "principal", "session"}),
    "prompts": frozenset({"prompt", "args", "principal", "session"}),
}
"""The CEL variables the conditions of each kind of rule may read."""

DEFAULT_RESOURCE_EFFECT: Final[Effect] = "allow"
"""The effect for resources and prompts no rule matches, unless ``defaults`` says otherwise."""

_TOOL_ONLY: Final = ("accept_flags", "unlock_after", "lock_after", "require_first")
SCOPED_FIELDS: Final = (
    *("resources", "prompts", "when", "unless", "effect", "approval", "redact"),
    *_TOOL_ONLY,
)
"""The rule fields `check_scope` validates (each after the selectors it depends on)."""
_RESOURCE_DECISIONS: Final = frozenset({"approve", "deny"})


@dataclass(frozen=True, slots=True)
class ResourceSelector:
    """The ``resources`` or ``prompts`` selector of a rule.

    Attributes:
        kind: What it matches.
        patterns: The globs as written.
        match: Whether a URI (or template) or an exposed prompt name matches one of them.
    """

    kind: ResourceKind
    patterns: tuple[str, ...]
    match: StrMatcher


def resource_selector(
    resources: Sequence[str] | None, prompts: Sequence[str] | None
) -> ResourceSelector | None:
    """The selector of a rule with these (validated) lists; None for a tool rule."""
    if resources is not None:
        return ResourceSelector("resources", tuple(resources), compile_uri_globs(resources))
    if prompts is not None:
        return ResourceSelector("prompts", tuple(prompts), compile_globs(prompts))
    return None


def rule_kind(data: Mapping[str, Any]) -> RuleKind:
    """What a rule's (already validated) fields make it match."""
    if data.get("resources") is not None:
        return "resources"
    if data.get("prompts") is not None:
        return "prompts"
    return "tools"


def _condition_problem(kind: RuleKind, source: str) -> str | None:
    allowed = KIND_VARIABLES[kind]
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
    if kind == "tools" or effect in KIND_EFFECTS[kind]:
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


def _default(kind: ResourceKind, effect: Effect, approval: ApprovalOptions) -> Decision:
    noun = "resource" if kind == "resources" else "prompt"
    reason = f"no {noun} rule matched; defaults.{kind} is {effect!r}"
    return Decision(effect=effect, rule_id=None, reason=reason, approval=approval)


def resource_defaults(
    defaults: Sequence[Any], approval: ApprovalOptions
) -> dict[ResourceKind, Decision]:
    """The decision for resources and prompts no rule matches: per kind the most restrictive of
    the files' ``defaults.resources`` / ``defaults.prompts`` (``defaults``: the files' defaults
    models, in layer order), else `DEFAULT_RESOURCE_EFFECT`."""
    decisions: dict[ResourceKind, Decision] = {}
    for kind in KIND_EFFECTS:
        effects = [e for d in defaults if (e := getattr(d, kind, None)) is not None]
        winner = max(effects or [DEFAULT_RESOURCE_EFFECT], key=EFFECT_RANK.__getitem__)
        decisions[kind] = _default(kind, winner, approval)
    return decisions
