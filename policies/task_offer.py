"""Which tools a held call may be answered as a task for (`approval.as_task`), under a policy.

2025-11-25 has a client call a tool as a task only when the tool lists
``execution.taskSupport`` ``optional`` or ``required`` (absent means ``forbidden``: "clients
MUST NOT"). The gateway answers a held call as a task of its own whatever the upstream lists,
so its listing offers tasks for the tools this says yes for (`gateway.mcp.server`).
"""

from __future__ import annotations

from policies.engine import PolicyEngine
from toolsets.decision import ApprovalOptions, Effect
from toolsets.tooldef import ToolDef

__all__ = ["may_answer_as_task"]

_HOLDING: frozenset[Effect] = frozenset({"ask", "defer"})


def may_answer_as_task(engine: PolicyEngine, tool: ToolDef) -> bool:
    """Whether a call of ``tool`` may be held (``ask``, ``defer``) and answered as a task.

    Yes when a tool rule selecting its name and server holds with an ``as_task`` that can give
    a task (``always``, or ``auto`` without ``caller`` among the approvers), or when the default
    does and no rule decides every call of the tool. Conditions, principals and session gates
    are not evaluated: a rule that may match counts, so the answer is the same for every caller
    (a call a task is offered for but not held is answered with a task that has already ended).
    """
    rules = [
        rule
        for rule in engine.rules
        if rule.selector is None and not rule.shadow and rule.applies_to(tool.name, tool.server)
    ]
    if any(_as_task(rule.effect, rule.approval) for rule in rules):
        return True
    decided = any(
        not rule.conditional and rule.match_principal is None and rule.gates is None
        for rule in rules
    )
    default = engine.default
    return not decided and _as_task(default.effect, default.approval)


def _as_task(effect: Effect, approval: ApprovalOptions) -> bool:
    if effect not in _HOLDING or approval.as_task == "never":
        return False
    return approval.as_task == "always" or "caller" not in approval.approvers
