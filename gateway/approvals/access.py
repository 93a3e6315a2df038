"""Who may see and decide a pending call: approvers named by its rule (for a staged call: by
its current stage), within its tenant, and never the caller itself unless the rule (or the
stage) names ``caller`` (separation of duties). Break-glass principals may approve any stage."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.approvals.pending import PendingCall
from gateway.approvals.stages import current_stage, has_voted
from toolsets.context import Principal

__all__ = ["may_break_glass", "may_decide", "may_see"]


def _named(entries: Iterable[str], who: Principal) -> bool:
    """Whether a ``role:NAME`` or ``user:ID`` entry names ``who``."""
    return any(
        a == who.id or (a.startswith("role:") and a.removeprefix("role:") in who.roles)
        for a in entries
        if a != "caller"
    )


def _in_stage(entries: tuple[str, ...], call: PendingCall, who: Principal) -> bool:
    if who.id == call.principal:
        return "caller" in entries  # the caller votes only where a stage names it
    return _named(entries, who)


def may_decide(call: PendingCall, who: Principal, *, as_caller: bool) -> bool:
    """Whether ``who`` may decide ``call`` (as its caller, or as a configured approver); for a
    staged call, whether ``who`` may vote in its current stage.

    A rule naming only ``caller`` still lets any configured approver decide: that is the
    fallback channel when the caller's client cannot be asked (no elicitation capability).
    """
    if who.tenant != call.tenant:  # tenants are partitioned outright
        return False
    if call.stages:
        stage = current_stage(call)
        return not as_caller and stage is not None and _in_stage(stage.approvers, call, who)
    if as_caller:
        return "caller" in call.approvers and who.id == call.principal
    if who.id == call.principal and "caller" not in call.approvers:
        return False  # separation of duties: nobody approves their own call unless the rule says
    named = [a for a in call.approvers if a != "caller"]
    if not named:
        return True
    return _named(named, who)


def may_break_glass(call: PendingCall, who: Principal) -> bool:
    """Whether ``who`` may approve ``call`` at once, skipping its remaining stages (never the
    caller's own call)."""
    return (
        who.tenant == call.tenant
        and who.id != call.principal
        and call.kind == "approval"
        and _named(call.break_glass, who)
    )


def may_see(call: PendingCall, who: Principal) -> bool:
    """Whether an approver or worker ``who`` may see ``call``: the approvals it may decide or
    break glass on, every external call (any worker or approver may post its result), its own
    connect records (nobody else's), and for a staged call also those it voted on and, once
    decided, those any stage named it in."""
    if who.tenant != call.tenant:
        return False
    if call.kind == "connect":  # a held connect (gateway.connect): its own caller's, only
        return who.id == call.principal
    if call.kind == "external" or may_decide(call, who, as_caller=False):
        return True
    if may_break_glass(call, who) or (call.stages and has_voted(call, who.id)):
        return True
    return (
        bool(call.stages)
        and call.state != "pending"
        and any(_in_stage(s.approvers, call, who) for s in call.stages)
    )
