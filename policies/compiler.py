"""Turning loaded policy files into one `CompiledPolicy`: rules in layer order plus the default."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policies.groups import ToolReference, merge_groups, tool_references
from policies.loader import LoadedFile, policy_version
from policies.model import ApprovalModel, DefaultsModel
from policies.rules import CompiledRule, compile_rule
from toolsets.decision import DEFAULT_APPROVAL, EFFECT_RANK, ApprovalOptions, Decision, Effect

__all__ = [
    "BUILTIN_DEFAULT_EFFECT",
    "BUILTIN_HIDE_FLAGGED",
    "CompiledPolicy",
    "compile_policy",
    "resolve_approval",
]

BUILTIN_DEFAULT_EFFECT: Effect = "ask"
"""The effect when no rule matches and no file declares ``defaults.effect``."""

BUILTIN_HIDE_FLAGGED: frozenset[str] = frozenset({"injection-marker"})
"""The flags that hide a tool when no file declares ``defaults.hide_flagged``."""


@dataclass(frozen=True, slots=True)
class CompiledPolicy:
    """Everything the engine evaluates against.

    Attributes:
        rules: Every rule in load order.
        default: The decision when no rule matches (without ``policy_version``).
        version: Hash of the loaded files.
        files: The files, in layer order.
        hide_flagged: Flags that hide a tool unless a matching rule accepts them.
        groups: Tool groups (hidden until loaded in the session), by name.
        tool_references: Every exact tool name of ``unlock_after``, ``lock_after``,
            ``require_first`` and ``groups``, located.
    """

    rules: tuple[CompiledRule, ...]
    default: Decision
    version: str
    files: tuple[str, ...]
    hide_flagged: frozenset[str] = BUILTIN_HIDE_FLAGGED
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tool_references: tuple[ToolReference, ...] = ()


def resolve_approval(chain: Sequence[ApprovalModel | None]) -> ApprovalOptions:
    """Per field, the first value set along ``chain``, else the built-in default."""
    models = [m for m in chain if m is not None]

    def first(name: str) -> object:
        return next((v for m in models if (v := getattr(m, name)) is not None), None)

    approvers, expires, hold, decisions = (first(n) for n in ApprovalModel.model_fields)
    return ApprovalOptions(
        approvers=tuple(approvers) if isinstance(approvers, list) else DEFAULT_APPROVAL.approvers,
        expires=expires if isinstance(expires, float) else DEFAULT_APPROVAL.expires,
        hold=hold if isinstance(hold, float) else DEFAULT_APPROVAL.hold,
        decisions=frozenset(decisions)
        if isinstance(decisions, list)
        else DEFAULT_APPROVAL.decisions,
    )


def _default_decision(defaults: Sequence[DefaultsModel], approval: ApprovalOptions) -> Decision:
    """The most restrictive declared default effect wins; ties go to the earliest file."""
    declared = [d for d in defaults if d.effect is not None]
    winner = max(declared, key=lambda d: EFFECT_RANK[d.effect or ""], default=None)
    effect: Effect = winner.effect if winner and winner.effect else BUILTIN_DEFAULT_EFFECT
    reason = (winner.reason if winner else None) or f"no rule matched; default effect {effect!r}"
    return Decision(
        effect=effect,
        rule_id=None,
        reason=reason,
        message=winner.message if winner else None,
        approval=approval,
    )


def _hide_flagged(defaults: Sequence[DefaultsModel]) -> frozenset[str]:
    """The union of the declared lists (a later file cannot lift an earlier one's), else the
    built-in set."""
    declared = [d.hide_flagged for d in defaults if d.hide_flagged is not None]
    if not declared:
        return BUILTIN_HIDE_FLAGGED
    return frozenset(flag for flags in declared for flag in flags)


def compile_policy(files: Sequence[LoadedFile]) -> CompiledPolicy:
    """Compile validated files; layer order is the order of ``files``."""
    defaults = [f.policy.defaults for f in files if f.policy.defaults is not None]
    global_approval = [d.approval for d in defaults]
    rules: list[CompiledRule] = []
    for loaded in files:
        own = loaded.policy.defaults.approval if loaded.policy.defaults else None
        for index, rule in enumerate(loaded.policy.rules):
            approval = resolve_approval([rule.approval, own, *global_approval])
            line, _ = loaded.position("rules", index)
            rules.append(
                compile_rule(rule, order=len(rules), file=loaded.file, line=line, approval=approval)
            )
    return CompiledPolicy(
        rules=tuple(rules),
        default=_default_decision(defaults, resolve_approval(global_approval)),
        version=policy_version(files),
        files=tuple(f.file for f in files),
        hide_flagged=_hide_flagged(defaults),
        groups=merge_groups(files),
        tool_references=tool_references(files),
    )
