"""`RuleIndex`: finds the rules whose selectors match a tool without scanning them all."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from policies.activation import merge_needs
from policies.cel_conditions import Needs
from policies.rules import CompiledRule

__all__ = ["CALL_ONLY", "LIST_TIME_BLOCKERS", "Candidates", "RuleIndex"]

LIST_TIME_BLOCKERS: Final = frozenset({"args", "session"})
"""Rules whose conditions read these are skipped at list time without a session."""

CALL_ONLY: Final = frozenset({"args"})
"""Rules whose conditions read these are skipped at list time even with a session: no call."""

_CACHE_LIMIT: Final = 8192


@dataclass(frozen=True, slots=True)
class Candidates:
    """The rules that apply to one tool by name and server, in load order.

    Attributes:
        call_rules: Rules to evaluate for a call.
        call_needs: What those rules' conditions read (the CEL context to build).
        list_rules: Rules to evaluate for listing (none reads ``args`` or ``session``, none is
            a shadow rule: shadow rules never hide a tool).
        list_needs: What those rules' conditions read.
        session_list_rules: Rules to evaluate for listing in a known session: ``list_rules``
            plus those whose conditions read ``session`` (but not ``args``).
        session_list_needs: What those rules' conditions read.
        gated: Whether any of the rules has session gates (``unlock_after``, ...).
    """

    call_rules: tuple[CompiledRule, ...]
    call_needs: Needs
    list_rules: tuple[CompiledRule, ...]
    list_needs: Needs
    session_list_rules: tuple[CompiledRule, ...] = ()
    session_list_needs: Needs = field(default_factory=dict)
    gated: bool = False

    @classmethod
    def of(cls, rules: Sequence[CompiledRule]) -> Candidates:
        """Candidates from statically matching rules (already in load order)."""
        listing = tuple(r for r in rules if not (r.shadow or r.variables & LIST_TIME_BLOCKERS))
        in_session = tuple(r for r in rules if not (r.shadow or r.variables & CALL_ONLY))
        return cls(
            tuple(rules),
            merge_needs(r.needs for r in rules),
            listing,
            merge_needs(r.needs for r in listing),
            in_session,
            merge_needs(r.needs for r in in_session),
            gated=any(r.gates is not None for r in rules),
        )


class RuleIndex:
    """Rules bucketed by literal tool name, by literal server, and the rest; lookups are cached.

    Rules naming literal tools are found by name, rules naming only literal servers by server,
    all others (globs, no selector) are checked one by one. The result per (tool name, server)
    is cached, so evaluation cost does not grow with unrelated rules.
    """

    def __init__(self, rules: Sequence[CompiledRule]) -> None:
        self._by_tool: defaultdict[str, list[CompiledRule]] = defaultdict(list)
        self._by_server: defaultdict[str, list[CompiledRule]] = defaultdict(list)
        self._scan: list[CompiledRule] = []
        for rule in rules:
            if (names := rule.literal_tools) is not None:
                for name in names:
                    self._by_tool[name].append(rule)
            elif rule.tools is None and (servers := rule.literal_servers) is not None:
                for server in servers:
                    self._by_server[server].append(rule)
            else:
                self._scan.append(rule)
        self._cache: dict[tuple[str, str], Candidates] = {}

    def candidates(self, name: str, server: str) -> Candidates:
        """The rules whose tool and server selectors match ``name`` on ``server``."""
        key = (name, server)
        found = self._cache.get(key)
        if found is None:
            found = Candidates.of(self._lookup(name, server))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = found
        return found

    def _lookup(self, name: str, server: str) -> list[CompiledRule]:
        pool = [*self._by_tool.get(name, ()), *self._by_server.get(server, ()), *self._scan]
        unique = {id(rule): rule for rule in pool if rule.applies_to(name, server)}
        return sorted(unique.values(), key=lambda rule: rule.order)
