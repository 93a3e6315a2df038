"""`PolicyEngine`: evaluates the compiled policy for listings and calls."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from policies.activation import build_context
from policies.cel_conditions import Condition, ConditionError, Needs
from policies.compiler import CompiledPolicy, compile_policy
from policies.gates import apply_gates
from policies.groups import group_tool_name, unknown_tools
from policies.index import RuleIndex
from policies.loader import load_files
from policies.messages import MessageTemplate, parse_message
from policies.rules import CompiledRule
from policies.session import SessionState
from policies.session_gates import SessionGates
from policies.surface import SurfacePolicy
from toolsets.context import Principal
from toolsets.decision import Decision, Effect, ShadowMatch
from toolsets.errors import ConfigIssue
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
        tool_rules = [rule for rule in compiled.rules if rule.surface is None]
        self._index = RuleIndex(tool_rules)
        self._rules = {rule.id: rule for rule in compiled.rules}
        self._default = dataclasses.replace(compiled.default, policy_version=compiled.version)
        self._decisions: dict[tuple[int, ...], Decision] = {}
        self._shadowing = any(rule.shadow for rule in compiled.rules)
        self._templates = _templates([compiled.default.message, *(r.message for r in self.rules)])
        self._gates = SessionGates(tool_rules, compiled.groups)
        defaults = {
            kind: dataclasses.replace(default, policy_version=compiled.version)
            for kind, default in compiled.surface_defaults.items()
        }
        self._surface = SurfacePolicy(compiled.rules, defaults, self._conclude)
        read = [
            *(rule.variables for rule in compiled.rules),
            *(t.roots for t in self._templates.values()),
        ]
        self._uses_session = self._gates.reads_session or any("session" in r for r in read)

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

    @property
    def surface(self) -> SurfacePolicy:
        """Decisions on resource reads and prompt gets (the rules naming them)."""
        return self._surface

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """Tool groups by name: their tools are hidden until the group is loaded in the session."""
        return self._gates.groups

    @property
    def reads_session(self) -> bool:
        """Whether listings depend on the session (gates, groups or rules reading ``session``)."""
        return self._gates.reads_session

    @property
    def uses_session(self) -> bool:
        """Whether any decision reads session state: listings (`reads_session`), a condition
        of any rule (tools, resources, prompts; shadow ones too) or a message reading
        ``session``. When False, decisions are the same in every session."""
        return self._uses_session

    def session_key(self, session: SessionState | None) -> Hashable:
        """What listings read of ``session`` (None: a fresh one): under this policy, sessions
        with equal keys see the same tools. None when listings read no session."""
        return self._gates.key(session)

    def groups_of(self, tool_name: str) -> tuple[str, ...]:
        """The groups ``tool_name`` belongs to (empty when it is in none)."""
        return self._gates.groups_of(tool_name)

    def check_tool_names(self, known: Collection[str]) -> list[ConfigIssue]:
        """One located issue per tool name in ``unlock_after``, ``lock_after``,
        ``require_first`` or ``groups`` that is not in ``known`` (the ``load_NAME`` tools of the
        policy's groups count as known)."""
        loaders = {group_tool_name(name) for name in self.groups}
        names = loaders.union(known) if loaders else known
        return unknown_tools(self._compiled.tool_references, names)

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

    def evaluate_visibility(
        self, tool: ToolDef, principal: Principal, session: SessionState | None = None
    ) -> Decision:
        """Decide whether ``tool`` is listed for ``principal`` in ``session`` (``hide`` removes it).

        Session gates and groups apply (None: a fresh session). Rules whose conditions read
        ``args`` are skipped, and so are rules reading ``session`` when none is given: they
        decide calls only.
        """
        found = self._index.candidates(tool.name, tool.server)
        in_session = session is not None
        return self._evaluate(
            rules=found.session_list_rules if in_session else found.list_rules,
            needs=found.session_list_needs if in_session else found.list_needs,
            tool=tool,
            args=None,
            principal=principal,
            session=session,
            gated=found.gated,
        )

    def evaluate_call(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        principal: Principal,
        session: SessionState | None = None,
    ) -> Decision:
        """Decide a call of ``tool`` with ``args`` in ``session`` (None: a fresh session);
        ``hide`` means "answer as unknown tool"."""
        found = self._index.candidates(tool.name, tool.server)
        decision = self._evaluate(
            rules=found.call_rules,
            needs=found.call_needs,
            tool=tool,
            args=args,
            principal=principal,
            session=session,
            gated=found.gated,
        )
        template = self._templates.get(decision.message) if decision.message else None
        if template is None:
            return decision
        message = template.render(
            tool=tool, args=args, principal=principal, session=session, redact=decision.redact
        )
        return dataclasses.replace(decision, message=message)

    def _evaluate(
        self,
        *,
        rules: tuple[CompiledRule, ...],
        needs: Needs,
        tool: ToolDef,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
        gated: bool = False,
    ) -> Decision:
        """``args`` is None for a listing; ``gated``: some of ``rules`` have session gates."""
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
        shadow: list[CompiledRule] = []
        enforced = failures
        if self._shadowing:
            matched, shadow, enforced = _split_shadow(matched, failures)
        if gated:
            decision = self._decide_gated(matched, enforced, tool.name, session, args is None)
        else:
            decision = (
                self._fail_closed(matched, enforced) if enforced else self._decide(tuple(matched))
            )
        if shadow:
            decision = _with_shadow(decision, shadow, failures)
        if decision.effect != "hide" and self._gates.groups:
            decision = self._hide_grouped(tool.name, session, decision)
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

    def _decide_gated(
        self,
        matched: list[CompiledRule],
        failures: dict[int, str],
        tool: str,
        session: SessionState | None,
        listing: bool,
    ) -> Decision:
        """The decision with every rule whose gate is locked counting as locked; not cached
        then, as a locked rule's reason names the gate that locks it in this session."""
        locked = apply_gates(matched, tool, session, listing=listing)
        if failures:
            return self._fail_closed(matched if locked is None else locked, failures)
        if locked is None:
            return self._decide(tuple(matched))
        return self._decision(locked, _winner(locked))

    def _hide_grouped(
        self, tool: str, session: SessionState | None, decision: Decision
    ) -> Decision:
        """``decision``, or ``hide`` (as a default: no rule id) when the tool's groups are not
        loaded in ``session``."""
        reason = self._gates.group_lock(tool, session)
        if reason is None:
            return decision
        return dataclasses.replace(
            decision, effect="hide", rule_id=None, reason=reason, message=None
        )

    def _conclude(
        self, matched: list[CompiledRule], failures: dict[int, str], default: Decision
    ) -> Decision:
        """The decision of the rules that ``matched`` (``failures``: their conditions that could
        not be evaluated), or ``default`` when none did: for resources and prompts."""
        matched, shadow, enforced = _split_shadow(matched, failures)
        if enforced:
            decision = self._fail_closed(matched, enforced)
        else:
            decision = self._decide(tuple(matched)) if matched else default
        return _with_shadow(decision, shadow, failures) if shadow else decision

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
            limits=tuple(rule.limit for rule in matched if rule.limit is not None),
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


def _templates(messages: Iterable[str | None]) -> dict[str, MessageTemplate]:
    """Messages that need rendering (placeholders or escaped braces), by their text."""
    parsed = (
        parse_message(text) for text in set(messages) if text and ("{" in text or "}" in text)
    )
    return {template.text: template for template in parsed}


def _split_shadow(
    matched: list[CompiledRule], failures: dict[int, str]
) -> tuple[list[CompiledRule], list[CompiledRule], dict[int, str]]:
    """The enforced rules, the shadow rules, and the failures of the enforced rules."""
    shadow = [rule for rule in matched if rule.shadow]
    if not shadow:
        return matched, shadow, failures
    skip = {rule.order for rule in shadow}
    enforced = {order: error for order, error in failures.items() if order not in skip}
    return [rule for rule in matched if not rule.shadow], shadow, enforced


def _with_shadow(
    decision: Decision, shadow: Sequence[CompiledRule], failures: Mapping[int, str]
) -> Decision:
    """``decision`` with what the matching ``shadow`` rules would have decided; their
    ``redact`` paths apply too (masking is not a decision)."""
    matches = tuple(
        ShadowMatch(
            rule_id=rule.id,
            effect="deny",
            reason=f"policy condition of rule {rule.id!r} failed: {failures[rule.order]}",
        )
        if rule.order in failures
        else ShadowMatch(rule_id=rule.id, effect=rule.effect, reason=rule.reason, limit=rule.limit)
        for rule in shadow
    )
    redact = tuple(dict.fromkeys([*decision.redact, *(p for r in shadow for p in r.redact)]))
    return dataclasses.replace(decision, shadow=matches, redact=redact)


def _winner(matched: Sequence[CompiledRule]) -> CompiledRule:
    """The most restrictive rule; the earliest among equals."""
    best = matched[0]
    for rule in matched[1:]:
        if rule.rank > best.rank:
            best = rule
    return best
