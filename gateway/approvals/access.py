"""Who may see and decide a pending call: approvers named by its rule, within its tenant, and
never the caller itself unless the rule names ``caller`` (separation of duties)."""

from __future__ import annotations

from gateway.approvals.pending import PendingCall
from toolsets.context import Principal

__all__ = ["may_decide", "may_see"]


def may_decide(call: PendingCall, who: Principal, *, as_caller: bool) -> bool:
    """Whether ``who`` may decide ``call`` (as its caller, or as a configured approver).

    A rule naming only ``caller`` still lets any configured approver decide: that is the
    fallback channel when the caller's client cannot be asked (no elicitation capability).
    """
    if who.tenant != call.tenant:  # tenants are partitioned outright
        return False
    if as_caller:
        return "caller" in call.approvers and who.id == call.principal
    if who.id == call.principal and "caller" not in call.approvers:
        return False  # separation of duties: nobody approves their own call unless the rule says
    named = [a for a in call.approvers if a != "caller"]
    if not named:
        return True
    return any(
        a == who.id or (a.startswith("role:") and a.removeprefix("role:") in who.roles)
        for a in named
    )


def may_see(call: PendingCall, who: Principal) -> bool:
    """Whether an approver or worker ``who`` may see ``call``: the approvals it may decide, and
    every external call (any worker or approver may post its result)."""
    if who.tenant != call.tenant:
        return False
    return call.kind == "external" or may_decide(call, who, as_caller=False)
