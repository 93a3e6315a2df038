"""A rule's session gates: ``unlock_after``, ``lock_after`` and ``require_first``.

A gate reads which tools succeeded in the session. While a gate is locked, the rule counts with
a locked effect instead of its own: ``hide`` in listings; for calls ``hide`` (answered as an
unknown tool) or ``deny`` with the rule's ``message`` when it has one, and always ``deny`` for
``require_first``. An open gate leaves the rule as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from policies.model import RuleModel
from policies.session import SessionState
from toolsets.decision import EFFECT_RANK

if TYPE_CHECKING:
    from policies.rules import CompiledRule

__all__ = ["GateKind", "Lock", "RuleGates", "apply_gates", "require_first_message"]

GateKind = Literal["unlock_after", "lock_after", "require_first"]


def require_first_message(tool: str) -> str:
    """What the model reads when a ``require_first`` rule without ``message`` refuses a call."""
    return f"Call {tool} first: it must succeed in this session before other tools can be used."


def _names(names: Sequence[str]) -> str:
    quoted = ", ".join(repr(n) for n in names)
    return quoted if len(names) == 1 else f"one of {quoted}"


@dataclass(frozen=True, slots=True)
class Lock:
    """A locked gate.

    Attributes:
        kind: The rule option that locks.
        reason: Why, naming the rule and the tools (for operators).
        unlock: The tools whose success would open it (empty: none would, ``lock_after``).
    """

    kind: GateKind
    reason: str
    unlock: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RuleGates:
    """The gate options of one rule (exact exposed tool names).

    Attributes:
        unlock_after: Locked until one of these succeeded in the session (empty: no such gate).
        lock_after: Locked once one of these succeeded in the session (empty: no such gate).
        require_first: Locked for every other tool until this one succeeded (None: no gate).
    """

    unlock_after: tuple[str, ...] = ()
    lock_after: tuple[str, ...] = ()
    require_first: str | None = None

    @classmethod
    def of(cls, rule: RuleModel) -> RuleGates | None:
        """The gates of ``rule``, or None when it has none."""
        if not (rule.unlock_after or rule.lock_after or rule.require_first):
            return None
        return cls(tuple(rule.unlock_after or ()), tuple(rule.lock_after or ()), rule.require_first)

    @property
    def names(self) -> frozenset[str]:
        """Every tool name the gates read."""
        first = (self.require_first,) if self.require_first is not None else ()
        return frozenset((*self.unlock_after, *self.lock_after, *first))

    def lock(self, rule_id: str, tool: str, session: SessionState | None) -> Lock | None:
        """The first locked gate for a call or listing of ``tool``, or None when all are open."""
        done = session.has_succeeded if session is not None else _nothing_succeeded
        if self.unlock_after and not any(map(done, self.unlock_after)):
            why = f"locked by rule {rule_id!r} until {_names(self.unlock_after)} succeeds"
            return Lock("unlock_after", f"{why} in this session", self.unlock_after)
        if self.lock_after and (spent := [n for n in self.lock_after if done(n)]):
            why = f"locked by rule {rule_id!r}: {spent[0]!r} already succeeded in this session"
            return Lock("lock_after", why)
        first = self.require_first
        if first is not None and tool != first and not done(first):
            why = f"rule {rule_id!r} requires {first!r} to succeed first in this session"
            return Lock("require_first", why, (first,))
        return None


def _nothing_succeeded(_tool: str) -> bool:
    return False


_HIDE_RANK: Final = EFFECT_RANK["hide"]
_DENY_RANK: Final = EFFECT_RANK["deny"]


def _locked(rule: CompiledRule, lock: Lock, listing: bool) -> CompiledRule:
    """``rule`` counting with its locked effect."""
    if listing or (lock.kind != "require_first" and rule.message is None):
        return dataclasses.replace(
            rule, effect="hide", rank=_HIDE_RANK, reason=lock.reason, message=None, locked=lock
        )
    message = rule.message
    if message is None and rule.gates is not None and rule.gates.require_first is not None:
        message = require_first_message(rule.gates.require_first)
    return dataclasses.replace(
        rule, effect="deny", rank=_DENY_RANK, reason=lock.reason, message=message, locked=lock
    )


def apply_gates(
    matched: Sequence[CompiledRule], tool: str, session: SessionState | None, *, listing: bool
) -> list[CompiledRule] | None:
    """``matched`` with every rule whose gate is locked for ``tool`` in ``session`` (None: a fresh
    session) replaced by its locked form; None when no gate is locked (decide as usual)."""
    result: list[CompiledRule] | None = None
    for index, rule in enumerate(matched):
        lock = rule.gates.lock(rule.id, tool, session) if rule.gates is not None else None
        if lock is not None:
            if result is None:
                result = list(matched)
            result[index] = _locked(rule, lock, listing)
    return result
