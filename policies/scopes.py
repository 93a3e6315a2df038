"""A rule's ``scopes``: the OAuth scopes a caller's token must hold to call the tools it matches.

A requirement, not an effect: a rule with ``scopes`` still decides with its own effect, and a
caller missing one of them is refused before that (over HTTP, a ``403 insufficient_scope``
challenge naming them, so the client can ask its authorization server for a larger token: the
MCP authorization spec's step-up). Listings still show the tools: the caller may step up. The
requirement reads only the rule's tool, server and principal selectors (a rule with ``scopes``
has no ``when``/``unless``), so the HTTP edge can check it before reading the arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policies.rules import CompiledRule
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

__all__ = ["ScopeRequirements", "ScopeRule"]


@dataclass(frozen=True, slots=True)
class ScopeRule:
    """A rule that requires scopes.

    Attributes:
        rule: The compiled rule (its selectors say which calls need the scopes).
        scopes: What the caller's token must hold, every one.
    """

    rule: CompiledRule
    scopes: frozenset[str]

    def applies(self, tool: ToolDef, principal: Principal) -> bool:
        """Whether calls of ``tool`` by ``principal`` need the scopes (shadow rules: never)."""
        rule = self.rule
        if rule.shadow or not rule.applies_to(tool.name, tool.server):
            return False
        return rule.match_principal is None or rule.match_principal(principal)


class ScopeRequirements:
    """The scopes each call needs under one compiled policy."""

    def __init__(self, rules: Sequence[ScopeRule]) -> None:
        self._rules = tuple(rules)
        self.all: frozenset[str] = frozenset().union(*(r.scopes for r in rules))
        """Every scope some rule requires (the resource metadata's ``scopes_supported``)."""

    def required(self, tool: ToolDef, principal: Principal) -> frozenset[str]:
        """The scopes a call of ``tool`` by ``principal`` needs (empty: none)."""
        return frozenset().union(*(r.scopes for r in self._rules if r.applies(tool, principal)))

    def missing(self, tool: ToolDef, principal: Principal) -> tuple[str, ...]:
        """The scopes a call of ``tool`` needs that ``principal``'s token lacks, sorted."""
        if self.all <= principal.scopes:
            return ()
        return tuple(sorted(self.required(tool, principal) - principal.scopes))
