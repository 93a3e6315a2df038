"""`PolicyEngine`: evaluates the compiled policy for listings and calls."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from policies.activation import build_context
from policies.cel_conditions import Condition, ConditionError, Needs
from policies.compiler import CompiledPolicy, compile_policy
from policies.index import RuleIndex
from policies.loader import load_files
from policies.rules import CompiledRule
from policies.session import SessionState
from toolsets.context import Principal
from toolsets.decision import Decision, Effect
from toolsets.tooldef import ToolDef

__all__ = ["FAIL_CLOSED_MESSAGE", "FLAG_REASONS", "PolicyEngine"]

FAIL_CLOSED_MESSAGE: Final = "This call was blocked: a policy condition could not be evaluated."
FLAG_REASONS: Final = {
    "injection-marker": "the tool's description carries injection markers",
    "sensitive-path": "the tool's description names sensitive paths",
    "invisible-characters": "the tool's description holds invisible characters",
    "long-description": "the tool's description is over-long",
}
"""Why a flag hides a tool, in the words a `Decision` reason uses."""
_DENY_RANK: Final = 3
_CACHE_LIMIT: Final = 8192


class PolicyEngine:
    """An immutable, compiled policy; swap engines to reload (see `PolicyHolder`)."""

    def __init__(self, compiled: CompiledPolicy) -> None:
        """Wrap a compiled policy; use `load` or `empty` to build one."""
        self._compiled = compiled
        self._index = RuleIndex(compiled.rules)
        self._rules = {rule.id: rule for rule in compiled.rules}
        self._default = dataclasses.replace(compiled.default, policy_version=compiled.version)
        self._decisions: dict[tuple[int, ...], Decision] = {}

    @classmethod
    def load(cls, paths: Sequence[str | Path]) -> PolicyEngine:
        """Load and compile policy files, layered in the given order.

        Raises:
            PolicyError: With every issue across all files, each located.
        """
        return cls(compile_policy(load_files(paths)))

    @classmethod
    def empty(cls, default_effect: Effect = "allow") -> PolicyEngine:
        """An engine without rules, for a gateway with no policy configured."""
        version = hashlib.sha256(f"empty:{default_effect}".encode()).hexdigest()[:16]
        reason = f"no policy configured; default effect {default_effect!r}"
        default = Decision(effect=default_effect, rule_id=None, reason=reason)
        return cls(CompiledPolicy(rules=(), default=default, version=version, files=()))

    @property
    def version(self) -> str:
        """Hash of the loaded files (layer order matters)."""
        return self._compiled.version

    @property
    def files(self) -> tuple[str, ...]:
        """The loaded files, in layer order."""
        return self._compiled.files

    @property
    def hide_flagged(self) -> frozenset[str]:
        """Flags that hide a tool unless a matching rule lists them in ``accept_flags``."""
        return self._compiled.hide_flagged

    @property
    def rules(self) -> tuple[CompiledRule, ...]:
        """Every rule, in load order."""
        return self._compiled.rules

    def rule(self, rule_id: str) -> CompiledRule:
        """The rule with id ``rule_id``.

        Raises:
            KeyError: When there is no such rule.
        """
        return self._rules[rule_id]

    def hiding_flags(
        self, flags: Iterable[str], matched: Iterable[CompiledRule]
    ) -> tuple[str, ...]:
        """The ``flags`` that hide a tool: in ``hide_flagged`` and in the ``accept_flags`` of none
        of the rules that ``matched`` it (a rule whose condition failed accepts nothing)."""
        accepted = frozenset(flag for rule in matched for flag in rule.accept_flags)
        return tuple(f for f in flags if f in self._compiled.hide_flagged and f not in accepted)

    def evaluate_visibility(self, tool: ToolDef, principal: Principal) -> Decision:
        """Decide whether ``tool`` is listed for ``principal`` (``hide`` removes it).

        Rules whose conditions read ``args`` or ``session`` are skipped: they decide calls only.
        """
        found = self._index.candidates(tool.name, tool.server)
        return self._evaluate(
            rules=found.list_rules,
            needs=found.list_needs,
            tool=tool,
            args=None,
            principal=principal,
            session=None,
        )

    def evaluate_call(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        principal: Principal,
        session: SessionState | None,
    ) -> Decision:
        """Decide a call of ``tool`` with ``args``; ``hide`` means "answer as unknown tool"."""
        found = self._index.candidates(tool.name, tool.server)
        return self._evaluate(
            rules=found.call_rules,
            needs=found.call_needs,
            tool=tool,
            args=args,
            principal=principal,
            session=session,
        )

    def _evaluate(
        self,
        *,
        rules: tuple[CompiledRule, ...],
        needs: Needs,
        tool: ToolDef,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
    ) -> Decision:
        matched: list[CompiledRule] = []
        failures: dict[int, str] = {}
        context: Any = None
        memo: dict[Condition, bool] = {}
        for rule in rules:
            if rule.match_principal is not None and not rule.match_principal(principal):
                continue
            if rule.conditional:
                try:
                    if context is None:
                        context = build_context(needs, tool, args, principal, session)
                    if not rule.holds(context, memo):
                        continue
                except ConditionError as exc:
                    failures[rule.order] = str(exc)
            matched.append(rule)
        decision = (
            self._fail_closed(matched, failures) if failures else self._decide(tuple(matched))
        )
        if tool.flags and decision.effect != "hide":
            accepting = [rule for rule in matched if rule.order not in failures]
            return self._hide_unaccepted(tool.flags, accepting, decision)
        return decision

    def _hide_unaccepted(
        self, flags: Sequence[str], matched: Sequence[CompiledRule], decision: Decision
    ) -> Decision:
        """``decision``, or ``hide`` (as a default: no rule id) when a flag is not accepted."""
        hiding = self.hiding_flags(flags, matched)
        if not hiding:
            return decision
        why = "; ".join(FLAG_REASONS.get(flag, f"the tool is flagged {flag!r}") for flag in hiding)
        reason = (
            f"{why} (flagged {', '.join(hiding)}: hidden by defaults.hide_flagged; "
            f"no matching rule lists {'it' if len(hiding) == 1 else 'them'} in accept_flags)"
        )
        return dataclasses.replace(
            decision, effect="hide", rule_id=None, reason=reason, message=None
        )

    def _decide(self, matched: tuple[CompiledRule, ...]) -> Decision:
        if not matched:
            return self._default
        key = tuple(rule.order for rule in matched)
        decision = self._decisions.get(key)
        if decision is None:
            decision = self._decision(matched, _winner(matched))
            if len(self._decisions) >= _CACHE_LIMIT:
                self._decisions.clear()
            self._decisions[key] = decision
        return decision

    def _decision(self, matched: Sequence[CompiledRule], winner: CompiledRule) -> Decision:
        return Decision(
            effect=winner.effect,
            rule_id=winner.id,
            reason=winner.reason,
            message=winner.message,
            approval=winner.approval,
            matched=tuple(rule.id for rule in matched),
            policy_version=self._compiled.version,
            redact=tuple(dict.fromkeys(path for rule in matched for path in rule.redact)),
        )

    def _fail_closed(self, matched: list[CompiledRule], failures: dict[int, str]) -> Decision:
        """A failed condition counts as a matching ``deny`` rule carrying the CEL error."""
        as_deny = [
            dataclasses.replace(
                rule,
                effect="deny",
                rank=_DENY_RANK,
                reason=f"policy condition of rule {rule.id!r} failed: {failures[rule.order]}",
                message=FAIL_CLOSED_MESSAGE,
            )
            if rule.order in failures
            else rule
            for rule in matched
        ]
        return self._decision(as_deny, _winner(as_deny))


def _winner(matched: Sequence[CompiledRule]) -> CompiledRule:
    """The most restrictive rule; the earliest among equals."""
    best = matched[0]
    for rule in matched[1:]:
        if rule.rank > best.rank:
            best = rule
    return best
