"""`SessionGates`: what of a session one policy reads for listings, and its tool groups."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Final

from policies.activation import merge_needs
from policies.groups import group_tool_name
from policies.rules import CompiledRule
from policies.session import SessionState
from toolsets.canonical import canonical_json

__all__ = ["SessionGates"]

_LISTING: Final = frozenset({"session", "args"})
_NOT_READ: Final = frozenset[str]({"\0"})
"""Marks "no listing rule reads ``session``" (a real field set never holds NUL)."""


class SessionGates:
    """The session-dependent parts of one compiled policy.

    Args:
        rules: Every rule, in load order.
        groups: The tool groups, by name.
    """

    def __init__(
        self, rules: Sequence[CompiledRule], groups: Mapping[str, tuple[str, ...]]
    ) -> None:
        self.groups: Mapping[str, tuple[str, ...]] = MappingProxyType(dict(groups))
        of_tool: dict[str, list[str]] = {}
        for name, tools in groups.items():
            for tool in tools:
                of_tool.setdefault(tool, []).append(name)
        self._of_tool = {tool: tuple(names) for tool, names in of_tool.items()}
        self._gate_tools = frozenset(n for r in rules if r.gates is not None for n in r.gates.names)
        listing = [r for r in rules if not r.shadow and r.variables & _LISTING == {"session"}]
        self._fields = merge_needs(r.needs for r in listing).get("session", _NOT_READ)
        self.reads_session = bool(self._gate_tools or self.groups or listing)
        """Whether listings depend on the session (gates, groups or session-reading rules)."""

    def groups_of(self, tool: str) -> tuple[str, ...]:
        """The groups ``tool`` belongs to (empty: it is not grouped)."""
        return self._of_tool.get(tool, ())

    def group_lock(self, tool: str, session: SessionState | None) -> str | None:
        """Why ``tool`` is hidden by its groups in ``session`` (None: a fresh session), or None
        when it is in no group or one of its groups is loaded."""
        names = self._of_tool.get(tool)
        if names is None or (session is not None and not session.groups.isdisjoint(names)):
            return None
        if len(names) == 1:
            where = f"in group {names[0]!r}, not loaded in this session"
        else:
            where = f"in groups {', '.join(map(repr, names))}, none loaded in this session"
        loaders = " or ".join(group_tool_name(n) for n in names)
        return f"tool {tool!r} is {where} (calling {loaders} loads it)"

    def key(self, session: SessionState | None) -> Hashable:
        """Under this policy, sessions with equal keys see the same tools (None: a fresh one).

        Holds which gate tools succeeded, which groups are loaded and, when listing rules read
        ``session``, the fields they read.
        """
        if not self.reads_session:
            return None
        state = session if session is not None else SessionState("")
        done = frozenset(name for name in self._gate_tools if state.has_succeeded(name))
        loaded = frozenset(state.groups.intersection(self.groups))
        if self._fields is _NOT_READ:
            return done, loaded
        value = state.cel_value()
        if self._fields is not None:
            value = {name: value[name] for name in self._fields if name in value}
        try:
            return done, loaded, canonical_json(value)
        except (TypeError, ValueError):  # not JSON (NaN arguments): equal to no other key
            return done, loaded, object()
