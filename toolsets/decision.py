"""Effects and the frozen `Decision` a policy returns for one listing or one call (a value of the
call chain: `policies/` produces it, the wrappers in `toolsets/` read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, get_args

from toolsets.call_labels import CallLabels
from toolsets.findings import Finding
from toolsets.rates import RateLimit

__all__ = [
    "ALL_DECISION_KINDS",
    "DEFAULT_APPROVAL",
    "DEFAULT_GRANT_MAX",
    "EFFECT_RANK",
    "ApprovalOptions",
    "ApprovalStage",
    "Decision",
    "DecisionKind",
    "Effect",
    "GrantScope",
    "ShadowMatch",
]

Effect = Literal["allow", "ask", "defer", "deny", "hide"]
"""What happens to a tool: listed and run, held for approval, run outside, refused, or hidden."""

DecisionKind = Literal["approve", "deny", "edit", "respond"]
"""What an approver may answer to a held call."""

EFFECT_RANK: Final[dict[str, int]] = {"allow": 0, "defer": 1, "ask": 2, "deny": 3, "hide": 4}
"""Restrictiveness of each effect; the highest rank among matching rules wins."""

ALL_DECISION_KINDS: Final[frozenset[DecisionKind]] = frozenset(get_args(DecisionKind))

GrantScope = Literal["once", "session", "tool"]
"""How far an approval reaches: this call, later calls of the session, or of the tool."""

DEFAULT_GRANT_MAX: Final = 3600.0
"""The longest a session or tool grant lasts (seconds) when the rule does not say."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalStage:
    """One stage of a staged approval: ``min`` different people among ``approvers`` approve.

    Attributes:
        approvers: Who may vote in the stage (``role:NAME``, ``user:ID``, ``caller``).
        min: How many approving votes the stage needs.
    """

    approvers: tuple[str, ...]
    min: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalOptions:
    """How a held call (effect ``ask``) is approved.

    Attributes:
        approvers: Who may decide: ``"role:NAME"``, ``"user:ID"``, or ``"caller"`` (the calling
            user, asked through MCP elicitation). Empty means any approver the gateway knows.
        expires: Seconds until an undecided approval request expires.
        hold: Seconds the call is held open waiting for a decision before it is answered as pending.
        decisions: The answers an approver may give.
        grants: How far an approval may reach (``once`` is a plain approval); see `GrantScope`.
        grant_max: The longest a session or tool grant may last, in seconds.
        stages: Staged (M-of-N) approval, decided in order; empty: one decision by any of
            ``approvers`` (which, with stages, lists every stage's approvers but ``caller``).
        break_glass: Who may approve at once, skipping remaining stages, with a reason.
        as_task: Whether a task-augmented call held here is answered at once with a task
            (``auto``: unless the caller decides in-band; ``always``; ``never``: held open).
    """

    approvers: tuple[str, ...] = ()
    expires: float = 15 * 60.0
    hold: float = 50.0
    decisions: frozenset[DecisionKind] = ALL_DECISION_KINDS
    grants: tuple[GrantScope, ...] = ("once",)
    grant_max: float = DEFAULT_GRANT_MAX
    stages: tuple[ApprovalStage, ...] = ()
    break_glass: tuple[str, ...] = ()
    as_task: Literal["auto", "always", "never"] = "auto"


DEFAULT_APPROVAL: Final = ApprovalOptions()
"""The built-in approval options, used where no policy file says otherwise."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShadowMatch:
    """A rule in ``mode: shadow`` that matched: what it would have decided, had it counted.

    Attributes:
        rule_id: The shadow rule.
        effect: Its effect (``deny`` when its condition could not be evaluated).
        reason: Its reason (or the evaluation error).
        limit: Its rate limit, if it has one.
        retry_after: Set by the rate-limit step when ``limit`` would have refused this call:
            the seconds the caller would have been told to wait.
    """

    rule_id: str
    effect: Effect
    reason: str
    limit: RateLimit | None = None
    retry_after: int | None = None


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
        grant: For an ``ask`` a standing grant answered (the call runs without asking), the
            grant's id; its events name it.
        gate_locked: The winning rule counts with its locked effect: one of its session gates
            refuses (or hides) the tool in this session (``reason`` names the gate).
        unlock_by: For a locked gate, the tools whose success in the session would open it
            (empty: none would).
        findings: What content inspection found in the call's arguments (kind and span, never
            the text); an ``ask`` or ``deny`` finding escalated ``effect`` (`toolsets.inspected`).
        labels: The data-flow labels of the tool and of the session when decided (None: the
            policy labels nothing here).
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
    limits: tuple[RateLimit, ...] = ()
    grant: str | None = None
    findings: tuple[Finding, ...] = ()
    gate_locked: bool = False
    unlock_by: tuple[str, ...] = ()
    labels: CallLabels | None = None
