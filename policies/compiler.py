"""Turning loaded policy files into one `CompiledPolicy`: rules in layer order plus the default."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.groups import ToolReference, merge_groups, tool_references
from policies.loader import LoadedFile, policy_version
from policies.model import ApprovalModel, DefaultsModel, RuleModel
from policies.resource_rules import ResourceKind, resource_defaults, resource_selector
from policies.rules import CompiledRule, compile_rule
from policies.scopes import ScopeRule
from policies.tool_labels import LabelRule, compile_label_rule
from toolsets.decision import (
    DEFAULT_APPROVAL,
    EFFECT_RANK,
    ApprovalOptions,
    ApprovalStage,
    Decision,
    Effect,
)

__all__ = [
    "BUILTIN_DEFAULT_EFFECT",
    "BUILTIN_HIDE_FLAGGED",
    "CompiledPolicy",
    "compile_policy",
    "empty_policy",
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
        resource_defaults: The decision for resources and for prompts no rule matches.
        scope_rules: The rules with ``scopes``, in load order.
        label_rules: The rules with ``labels`` or ``sink_labels``, in load order (a rule
            without ``effect`` is only there, not in ``rules``).
    """

    rules: tuple[CompiledRule, ...]
    default: Decision
    version: str
    files: tuple[str, ...]
    hide_flagged: frozenset[str] = BUILTIN_HIDE_FLAGGED
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tool_references: tuple[ToolReference, ...] = ()
    resource_defaults: Mapping[ResourceKind, Decision] = field(
        default_factory=lambda: resource_defaults((), DEFAULT_APPROVAL)
    )
    scope_rules: tuple[ScopeRule, ...] = ()
    label_rules: tuple[LabelRule, ...] = ()


def resolve_approval(chain: Sequence[ApprovalModel | None]) -> ApprovalOptions:
    """Per field, the first value set along ``chain``, else the built-in default.

    With ``stages``, the approvers are every stage's (``caller`` aside: the caller votes only
    where a stage names it, never through the caller's own client) and ``edit`` is not offered.
    """
    models = [m for m in chain if m is not None]

    def first(name: str) -> Any:
        return next((v for m in models if (v := getattr(m, name)) is not None), None)

    base = DEFAULT_APPROVAL
    stages = tuple(
        ApprovalStage(approvers=tuple(s.approvers), min=s.min) for s in first("stages") or ()
    )
    decisions = frozenset(first("decisions") or base.decisions)
    approvers = tuple(first("approvers") or base.approvers)
    if stages:
        entries = [a for stage in stages for a in stage.approvers if a != "caller"]
        approvers, decisions = tuple(dict.fromkeys(entries)), decisions - {"edit"}
    return ApprovalOptions(
        approvers=approvers,
        expires=first("expires") if first("expires") is not None else base.expires,
        hold=first("hold") if first("hold") is not None else base.hold,
        decisions=decisions,
        grants=tuple(first("grants") or base.grants),
        grant_max=first("grant_max") or base.grant_max,
        stages=stages,
        break_glass=tuple(first("break_glass") or ()),
        as_task=first("as_task") or base.as_task,
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
    scoped: list[ScopeRule] = []
    labelled: list[LabelRule] = []
    for loaded in files:
        own = loaded.policy.defaults.approval if loaded.policy.defaults else None
        for index, rule in enumerate(loaded.policy.rules):
            line, _ = loaded.position("rules", index)
            if rule.labels is not None or rule.sink_labels is not None:
                labelled.append(_label_rule(rule, loaded.file, line))
            if rule.effect is None:
                continue
            approval = resolve_approval([rule.approval, own, *global_approval])
            rules.append(
                compile_rule(rule, order=len(rules), file=loaded.file, line=line, approval=approval)
            )
            if rule.scopes is not None:
                scoped.append(ScopeRule(rules[-1], frozenset(rule.scopes)))
    return CompiledPolicy(
        rules=tuple(rules),
        default=_default_decision(defaults, resolve_approval(global_approval)),
        version=policy_version(files),
        files=tuple(f.file for f in files),
        hide_flagged=_hide_flagged(defaults),
        groups=merge_groups(files),
        tool_references=tool_references(files),
        resource_defaults=resource_defaults(defaults, resolve_approval(global_approval)),
        scope_rules=tuple(scoped),
        label_rules=tuple(labelled),
    )


def _label_rule(rule: RuleModel, file: str, line: int | None) -> LabelRule:
    return compile_label_rule(
        rule.id,
        file=file,
        line=line,
        tools=rule.tools,
        servers=rule.servers,
        sources=rule.labels or (),
        sinks=rule.sink_labels or (),
        selector=resource_selector(rule.resources, rule.prompts),
    )


def empty_policy(default_effect: Effect = "allow") -> CompiledPolicy:
    """A policy without rules or files, for a gateway with no policy configured."""
    version = hashlib.sha256(f"empty:{default_effect}".encode()).hexdigest()[:16]
    reason = f"no policy configured; default effect {default_effect!r}"
    default = Decision(effect=default_effect, rule_id=None, reason=reason)
    return CompiledPolicy(rules=(), default=default, version=version, files=())
