"""`FlagHiding`: flags that hide a tool (``defaults.hide_flagged``) unless a rule accepts them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from policies.rules import CompiledRule
from policies.verdicts import hidden
from toolsets.decision import Decision

__all__ = ["FLAG_REASONS", "FlagHiding"]

FLAG_REASONS: Final = {
    "injection-marker": "the tool's description carries injection markers",
    "sensitive-path": "the tool's description names sensitive paths",
    "invisible-characters": "the tool's description holds invisible characters",
    "long-description": "the tool's description is over-long",
}
"""Why a flag hides a tool, in the words a `Decision` reason uses."""


@dataclass(frozen=True, slots=True)
class FlagHiding:
    """The flags of one policy that hide a tool.

    Attributes:
        hide_flagged: Flags that hide a tool unless a matching rule lists them in
            ``accept_flags``.
    """

    hide_flagged: frozenset[str]

    def hiding(self, flags: Iterable[str], matched: Iterable[CompiledRule]) -> tuple[str, ...]:
        """The ``flags`` that hide a tool: in ``hide_flagged`` and in the ``accept_flags`` of none
        of the rules that ``matched`` it (a rule whose condition failed accepts nothing)."""
        accepted = frozenset(flag for rule in matched for flag in rule.accept_flags)
        return tuple(f for f in flags if f in self.hide_flagged and f not in accepted)

    def apply(
        self, flags: Sequence[str], matched: Sequence[CompiledRule], decision: Decision
    ) -> Decision:
        """``decision``, or ``hide`` (as a default: no rule id) when a flag is not accepted."""
        hiding = self.hiding(flags, matched)
        if not hiding:
            return decision
        why = "; ".join(FLAG_REASONS.get(flag, f"the tool is flagged {flag!r}") for flag in hiding)
        reason = (
            f"{why} (flagged {', '.join(hiding)}: hidden by defaults.hide_flagged; "
            f"no matching rule lists {'it' if len(hiding) == 1 else 'them'} in accept_flags)"
        )
        return hidden(decision, reason)
