"""Effects and the frozen `Decision` a policy returns for one listing or one call (a value of the
call chain: `policies/` produces it, the wrappers in `toolsets/` read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, get_args

__all__ = [
    "ALL_DECISION_KINDS",
    "DEFAULT_APPROVAL",
    "EFFECT_RANK",
    "ApprovalOptions",
    "Decision",
    "DecisionKind",
    "Effect",
    "ShadowMatch",
]

Effect = Literal["allow", "ask", "defer", "deny", "hide"]
"""What happens to a tool: listed and run, held for approval, run outside, refused, or hidden."""

DecisionKind = Literal["approve", "deny", "edit", "respond"]
"""What an approver may answer to a held call."""

EFFECT_RANK: Final[dict[str, int]] = {"allow": 0, "defer": 1, "ask": 2, "deny": 3, "hide": 4}
"""Restrictiveness of each effect; the highest rank among matching rules wins."""

ALL_DECISION_KINDS: Final[frozenset[DecisionKind]] = frozenset(get_args(DecisionKind))


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalOptions:
    """How a held call (effect ``ask``) is approved.

    Attributes:
        approvers: Who may decide: ``"role:NAME"``, ``"user:ID"``, or ``"caller"`` (the calling
            user, asked through MCP elicitation). Empty means any approver the gateway knows.
        expires: Seconds until an undecided approval request expires.
        hold: Seconds the call is held open waiting for a decision before it is answered as pending.
        decisions: The answers an approver may give.
    """

    approvers: tuple[str, ...] = ()
    expires: float = 15 * 60.0
    hold: float = 50.0
    decisions: frozenset[DecisionKind] = ALL_DECISION_KINDS


DEFAULT_APPROVAL: Final = ApprovalOptions()
"""The built-in approval options, used where no policy file says otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShadowMatch:
    """A rule in ``mode: shadow`` that matched: what it would have decided, had it counted.

    Attributes:
        rule_id: The shadow rule.
        effect: Its effect (``deny`` when its condition could not be evaluated).
        reason: Its reason (or the evaluation error).
    """

    rule_id: str
    effect: Effect
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The outcome of evaluating the policy for one listing or one call.

    Attributes:
        effect: The winning effect.
        rule_id: The winning rule, or None when no rule matched and the default applied.
        reason: Why, for operators and approvers.
        message: What the model reads when the call is refused, if the rule says.
        approval: Approval options of the winning rule (meaningful for ``ask``).
        matched: Ids of every matching rule, in load order.
        policy_version: Hash of the loaded policy files.
        redact: Argument paths (``args.token``) to mask in events: union over matched rules.
        shadow: Shadow rules that matched, in load order; they never change the decision.
    """

    effect: Effect
    rule_id: str | None
    reason: str
    message: str | None = None
    approval: ApprovalOptions = field(default=DEFAULT_APPROVAL)
    matched: tuple[str, ...] = ()
    policy_version: str = ""
    redact: tuple[str, ...] = ()
    shadow: tuple[ShadowMatch, ...] = ()
