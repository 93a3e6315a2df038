"""What each session gate and tool group did to one decision, for ``lockgate policy explain``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from policies.engine import PolicyEngine
from policies.gates import RuleGates
from policies.session import SessionState
from toolsets.decision import Decision

__all__ = ["GateOption", "GateStatus", "gate_json", "gate_lines", "gate_statuses"]

GateOption = Literal["unlock_after", "lock_after", "require_first", "groups"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateStatus:
    """One gate that applies to the tool.

    Attributes:
        rule_id: The rule with the gate; None for tool groups.
        option: The option: ``unlock_after``, ``lock_after``, ``require_first`` or ``groups``.
        names: The tools it reads (the groups the tool is in, for ``groups``).
        locked: Whether it hides or refuses the tool in this session.
        detail: Why, in words.
    """

    rule_id: str | None
    option: GateOption
    names: tuple[str, ...]
    locked: bool
    detail: str


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(repr(name) for name in names)


def _rule_statuses(rule_id: str, gates: RuleGates, tool: str, done: set[str]) -> list[GateStatus]:
    found: list[tuple[GateOption, tuple[str, ...], bool, str]] = []
    if gates.unlock_after:
        passed = [n for n in gates.unlock_after if n in done]
        detail = f"{_quoted(passed)} succeeded" if passed else "none succeeded in this session"
        found.append(("unlock_after", gates.unlock_after, not passed, detail))
    if gates.lock_after:
        spent = [n for n in gates.lock_after if n in done]
        detail = f"{_quoted(spent)} succeeded" if spent else "none succeeded in this session"
        found.append(("lock_after", gates.lock_after, bool(spent), detail))
    first = gates.require_first
    if first is not None:
        locked = tool != first and first not in done
        if tool == first:
            detail = "this is the tool to call first"
        else:
            detail = f"{first!r} {'has not succeeded' if locked else 'succeeded'} in this session"
        found.append(("require_first", (first,), locked, detail))
    return [
        GateStatus(rule_id=rule_id, option=option, names=names, locked=locked, detail=detail)
        for option, names, locked, detail in found
    ]


def gate_statuses(
    engine: PolicyEngine, tool: str, decision: Decision, session: SessionState | None
) -> list[GateStatus]:
    """The gates of the rules that matched ``decision`` (in order), then ``tool``'s groups, in
    ``session`` (None: a fresh session)."""
    done = {name for name, count in session.succeeded.items() if count > 0} if session else set()
    statuses = []
    for rule_id in decision.matched:
        gates = engine.rule(rule_id).gates
        if gates is not None:
            statuses.extend(_rule_statuses(rule_id, gates, tool, done))
    groups = engine.groups_of(tool)
    if groups:
        loaded = [name for name in groups if session is not None and name in session.groups]
        detail = f"{_quoted(loaded)} loaded" if loaded else "not loaded in this session"
        status = GateStatus(
            rule_id=None, option="groups", names=groups, locked=not loaded, detail=detail
        )
        statuses.append(status)
    return statuses


def gate_lines(statuses: Sequence[GateStatus]) -> list[str]:
    """``gates:`` and one line per gate: rule, option, names, locked or open, and why."""
    if not statuses:
        return []
    width = max(len(status.rule_id or "(groups)") for status in statuses)
    lines = ["gates:"]
    for status in statuses:
        state = "locked" if status.locked else "open"
        lines.append(
            f"  {status.rule_id or '(groups)':<{width}}  {status.option} "
            f"{', '.join(status.names)}: {state} ({status.detail})"
        )
    return lines


def gate_json(statuses: Sequence[GateStatus]) -> list[dict[str, Any]]:
    """The gates as JSON-ready data."""
    return [
        {
            "rule": status.rule_id,
            "option": status.option,
            "names": list(status.names),
            "locked": status.locked,
            "detail": status.detail,
        }
        for status in statuses
    ]
