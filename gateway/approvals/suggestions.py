"""Grant suggestions: a pattern of held calls (same tool, same rule, same caller or any caller,
the arguments that were always the same) approved every time it was decided, at least N times
in the window, with no denial, edit or typed response of a matching call, becomes a proposed
policy change: an ``allow`` rule for exactly that pattern, and (when an explicit rule held the
calls) an ``unless`` on that rule excluding the same pattern, since the most restrictive
matching rule wins. Never applied by itself: an operator reads it, and edits the policy.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from gateway.approvals.pending import PendingCall
from toolsets.canonical import canonical_json

__all__ = ["DEFAULT_MIN_APPROVALS", "Suggestion", "apply_suggestion", "suggest"]

DEFAULT_MIN_APPROVALS: Final = 5
_REFUSALS: Final = frozenset({"deny", "edit", "respond"})
_IDENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCALARS: Final = (str, int, float, bool)
_NOT_IN_RULE_IDS: Final = re.compile(r"[^A-Za-z0-9_.:-]")


def _literal(value: Any) -> str:
    """``value`` (a JSON scalar) as a CEL literal: JSON's spelling is CEL's for these."""
    return json.dumps(value, ensure_ascii=True)


def _arg_test(key: str, value: Any) -> str:
    """``args[key] == value``, false (not an evaluation error) when the call lacks ``key``."""
    if _IDENT.match(key):
        return f"has(args.{key}) && args.{key} == {_literal(value)}"
    return f"{_literal(key)} in args && args[{_literal(key)}] == {_literal(value)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """A pattern approved every time it was decided in the window.

    Attributes:
        tool: The exposed tool name.
        rule_id: The rule that held the calls (None: the policy's default).
        principal: The one caller of every call, or None for a pattern across callers.
        args: The arguments that had the same (scalar) value in every approved call.
        approvals: How many calls of the pattern were approved.
        approved_by: Who approved them.
        first_at: When the first of them was held (unix seconds).
        last_at: When the last of them was held.
    """

    tool: str
    rule_id: str | None
    principal: str | None
    args: dict[str, Any]
    approvals: int
    approved_by: tuple[str, ...]
    first_at: float
    last_at: float

    @property
    def id(self) -> str:
        """A rule id naming the pattern (stable for the same pattern)."""
        key = canonical_json([self.tool, self.rule_id, self.principal, self.args])
        name = _NOT_IN_RULE_IDS.sub("-", self.tool[:60])
        return f"suggested-{name}-{hashlib.sha256(key).hexdigest()[:8]}"

    def matches(self, call: PendingCall) -> bool:
        """Whether ``call`` is of this pattern."""
        if (call.tool, call.rule_id) != (self.tool, self.rule_id):
            return False
        if self.principal is not None and call.principal != self.principal:
            return False
        return all(k in call.args and call.args[k] == v for k, v in self.args.items())

    def condition(self) -> str | None:
        """The CEL condition on the arguments, or None when no argument was always the same."""
        tests = [_arg_test(k, v) for k, v in sorted(self.args.items())]
        return " && ".join(tests) or None

    def allow_rule(self) -> dict[str, Any]:
        """The ``allow`` rule for exactly this pattern, as a policy file rule."""
        rule: dict[str, Any] = {"id": self.id, "tools": [self.tool]}
        if self.principal is not None:
            rule["principals"] = [self.principal]
        if (condition := self.condition()) is not None:
            rule["when"] = condition
        return rule | {"effect": "allow", "reason": self._why()}

    def exclusion(self) -> str | None:
        """The ``unless`` the asking rule needs so the pattern is not held; None when the
        policy's default held the calls (the ``allow`` rule is then enough)."""
        if self.rule_id is None:
            return None
        tests = [] if self.principal is None else [f"principal.id == {_literal(self.principal)}"]
        tests += [_arg_test(k, v) for k, v in sorted(self.args.items())]
        tests.append(f"tool.name == {_literal(self.tool)}")
        return " && ".join(tests)

    def policy_yaml(self) -> str:
        """The proposed change as a policy snippet, with how to apply it in comments."""
        lines = [f"# {self._why()}; never applied by itself."]
        where = "rules:" if self.rule_id is None else f"rules: (before rule {self.rule_id!r})"
        lines.append(f"# Add to {where}")
        lines.append(yaml.safe_dump({"version": 1, "rules": [self.allow_rule()]}, sort_keys=False))
        if (unless := self.exclusion()) is not None:
            lines.append(f"# and in rule {self.rule_id!r} (joined with || to any unless it has):")
            lines.append("#   unless: " + yaml.safe_dump(unless, width=10_000).split("\n")[0])
        return "\n".join(lines).rstrip() + "\n"

    def to_json(self) -> dict[str, Any]:
        """The suggestion as the API serves it, the snippet included."""
        return {
            "id": self.id,
            "tool": self.tool,
            "rule_id": self.rule_id,
            "principal": self.principal,
            "args": self.args,
            "approvals": self.approvals,
            "approved_by": list(self.approved_by),
            "first_at": self.first_at,
            "last_at": self.last_at,
            "allow_rule": self.allow_rule(),
            "unless": self.exclusion(),
            "policy": self.policy_yaml(),
        }

    def _why(self) -> str:
        who = "any caller" if self.principal is None else self.principal
        return (
            f"{self.tool} by {who}: approved {self.approvals} of {self.approvals} times"
            f" by {', '.join(self.approved_by)}"
        )


def _constant_args(calls: list[PendingCall]) -> dict[str, Any]:
    """The arguments with the same scalar value in every call."""
    first = calls[0].args
    return {
        k: v
        for k, v in first.items()
        if isinstance(v, _SCALARS) and all(k in c.args and c.args[k] == v for c in calls)
    }


def _pattern(
    approved: list[PendingCall], principal: str | None, refused: list[PendingCall], n: int
) -> Suggestion | None:
    if len(approved) < n:
        return None
    found = Suggestion(
        tool=approved[0].tool,
        rule_id=approved[0].rule_id,
        principal=principal,
        args=_constant_args(approved),
        approvals=len(approved),
        approved_by=tuple(sorted({c.decided_by or "" for c in approved})),
        first_at=min(c.created_at for c in approved),
        last_at=max(c.created_at for c in approved),
    )
    return None if any(found.matches(c) for c in refused) else found


def suggest(
    calls: Iterable[PendingCall], *, min_approvals: int = DEFAULT_MIN_APPROVALS
) -> list[Suggestion]:
    """The patterns in ``calls`` (one window's approvals) approved at least ``min_approvals``
    times and never denied, edited or answered instead: one per caller, and one across
    callers when several callers share it and some argument was always the same."""
    approved: dict[tuple[str, str | None], list[PendingCall]] = defaultdict(list)
    refused: dict[tuple[str, str | None], list[PendingCall]] = defaultdict(list)
    for call in calls:
        key = (call.tool, call.rule_id)
        if call.kind == "approval" and call.decision == "approve":
            approved[key].append(call)
        elif call.kind == "approval" and call.decision in _REFUSALS:
            refused[key].append(call)
    found: list[Suggestion] = []
    for key, group in sorted(approved.items(), key=lambda item: (item[0][0], item[0][1] or "")):
        callers: dict[str, list[PendingCall]] = defaultdict(list)
        for call in group:
            callers[call.principal].append(call)
        for principal, own in sorted(callers.items()):
            found.extend(s for s in [_pattern(own, principal, refused[key], min_approvals)] if s)
        across = _pattern(group, None, refused[key], min_approvals) if len(callers) > 1 else None
        if across is not None and across.args:  # a tool for everyone is no narrow grant
            found.append(across)
    return found


def apply_suggestion(document: Mapping[str, Any], suggestion: Suggestion) -> dict[str, Any]:
    """A copy of a policy file's ``document`` with ``suggestion`` applied: its ``allow`` rule
    before the asking rule (first when the default held the calls), and the asking rule's
    ``unless`` extended to leave the pattern out.

    Raises:
        ValueError: The asking rule is not in ``document``.
    """
    changed = copy.deepcopy(dict(document))
    rules: list[dict[str, Any]] = changed.setdefault("rules", [])
    if suggestion.rule_id is None:
        rules.insert(0, suggestion.allow_rule())
        return changed
    at = next((i for i, r in enumerate(rules) if r.get("id") == suggestion.rule_id), None)
    if at is None:
        raise ValueError(f"rule {suggestion.rule_id!r} is not in this policy file")
    asking, unless = rules[at], suggestion.exclusion()
    asking["unless"] = f"({asking['unless']}) || ({unless})" if asking.get("unless") else unless
    rules.insert(at, suggestion.allow_rule())
    return changed
