"""`Verdicts`: how the rules that matched become one `Decision`, for tools, resources and prompts.

Every matching rule counts and the most restrictive effect wins (the earliest rule among
equals). A condition that could not be evaluated counts as a matching ``deny`` carrying the CEL
error (fail closed). ``mode: shadow`` rules are recorded on the decision, never enforced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from policies.rules import CompiledRule
from toolsets.decision import EFFECT_RANK, Decision, ShadowMatch

__all__ = ["FAIL_CLOSED_MESSAGE", "Lock", "Verdicts", "hidden"]

FAIL_CLOSED_MESSAGE: Final = "This call was blocked: a policy condition could not be evaluated."

Lock = Callable[[list[CompiledRule]], list[CompiledRule] | None]
"""The enforced rules that matched, with those whose session gate is locked in their locked
form; None when no gate is locked (see `policies.gates.apply_gates`)."""

_DENY_RANK: Final = EFFECT_RANK["deny"]
_CACHE_LIMIT: Final = 8192


class Verdicts:
    """Concludes the rules of one compiled policy; decisions are cached by the rules that matched.

    Args:
        version: The policy version each decision carries.
        shadowing: Whether any rule is a shadow rule (else the split is skipped).
    """

    def __init__(self, version: str, *, shadowing: bool) -> None:
        self._version = version
        self._shadowing = shadowing
        self._cache: dict[tuple[int, ...], Decision] = {}

    def conclude(
        self,
        matched: list[CompiledRule],
        failures: dict[int, str],
        default: Decision,
        lock: Lock | None = None,
    ) -> Decision:
        """The decision of the rules that ``matched``, or ``default`` when none did.

        Args:
            matched: The matching rules, in load order.
            failures: The errors of their conditions that could not be evaluated, by rule order.
            default: The decision when no rule matched.
            lock: Applies the session gates (the decision is then not cached, as a locked
                rule's reason names the gate that locks it in this session).
        """
        shadow: Sequence[CompiledRule] = ()
        enforced = failures
        if self._shadowing:
            matched, shadow, enforced = _split_shadow(matched, failures)
        locked = lock(matched) if lock is not None else None
        if enforced:
            decision = self._fail_closed(matched if locked is None else locked, enforced)
        elif locked is not None:
            decision = self._decision(locked)
            gate = _winner(locked).locked
            if gate is not None:
                decision = dataclasses.replace(decision, gate_locked=True, unlock_by=gate.unlock)
        elif matched:
            decision = self._cached(tuple(matched))
        else:
            decision = default
        return _with_shadow(decision, shadow, failures) if shadow else decision

    def _cached(self, matched: tuple[CompiledRule, ...]) -> Decision:
        key = tuple(rule.order for rule in matched)
        decision = self._cache.get(key)
        if decision is None:
            decision = self._decision(matched)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = decision
        return decision

    def _decision(self, matched: Sequence[CompiledRule]) -> Decision:
        winner = _winner(matched)
        return Decision(
            effect=winner.effect,
            rule_id=winner.id,
            reason=winner.reason,
            message=winner.message,
            approval=winner.approval,
            matched=tuple(rule.id for rule in matched),
            policy_version=self._version,
            redact=tuple(dict.fromkeys(path for rule in matched for path in rule.redact)),
            limits=tuple(rule.limit for rule in matched if rule.limit is not None),
        )

    def _fail_closed(self, matched: list[CompiledRule], failures: dict[int, str]) -> Decision:
        """A failed condition counts as a matching ``deny`` rule carrying the CEL error."""
        return self._decision(
            [
                dataclasses.replace(
                    rule,
                    effect="deny",
                    rank=_DENY_RANK,
                    reason=_failed(rule, failures),
                    message=FAIL_CLOSED_MESSAGE,
                )
                if rule.order in failures
                else rule
                for rule in matched
            ]
        )


def hidden(decision: Decision, reason: str) -> Decision:
    """``decision`` turned into ``hide`` for ``reason``, as a default would (no rule id)."""
    return dataclasses.replace(decision, effect="hide", rule_id=None, reason=reason, message=None)


def _failed(rule: CompiledRule, failures: Mapping[int, str]) -> str:
    return f"policy condition of rule {rule.id!r} failed: {failures[rule.order]}"


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
        ShadowMatch(rule_id=rule.id, effect="deny", reason=_failed(rule, failures))
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
