"""Who may decide a held call and how many votes it still needs: the ``deciding`` part of its
context pack (`gateway.approvals.context_pack`), the same for every viewer."""

from __future__ import annotations

from typing import Any

from gateway.approvals.pending import PendingCall
from gateway.approvals.stages import current_stage

__all__ = ["deciding"]


def deciding(call: PendingCall) -> dict[str, Any]:
    """``approvers`` (the entries deciding now: the current stage's, or the call's), ``voted``
    (who approved in this stage), ``others`` (the entries that may still vote), ``votes`` /
    ``needed`` / ``remaining`` in this stage, ``stage`` and ``stages`` (1-based; 0 stages for a
    single decision), ``later`` stages, ``remaining_total`` votes over every stage left,
    ``break_glass`` and ``text``, all of it in words."""
    stage = current_stage(call)
    entries = stage.approvers if stage is not None else call.approvers
    needed = stage.min if stage is not None else 1
    voted = [vote.by for vote in call.votes if vote.stage == call.stage]
    later = list(call.stages[call.stage + 1 :]) if stage is not None else []
    pending = call.state == "pending"
    remaining = max(needed - len(voted), 0) if pending else 0
    data = {
        "approvers": list(entries),
        "voted": voted,
        "others": [entry for entry in entries if entry not in voted],
        "votes": len(voted),
        "needed": needed,
        "remaining": remaining,
        "remaining_total": remaining + sum(s.min for s in later) if pending else 0,
        "stage": min(call.stage + 1, len(call.stages)),
        "stages": len(call.stages),
        "later": [{"approvers": list(s.approvers), "min": s.min} for s in later],
        "break_glass": list(call.break_glass),
    }
    data["text"] = _text(call, data) if pending else f"decided ({call.state}): no votes needed"
    return data


def _who(entries: list[str], principal: str) -> str:
    if not entries:
        return "any approver"
    named = [f"the caller ({principal})" if e == "caller" else e for e in entries]
    return " or ".join(named)


def _text(call: PendingCall, data: dict[str, Any]) -> str:
    """``stage 1 of 2: 1 of 2 votes (user:bob voted), 1 more from role:security; then 1 of
    user:cto; break-glass: role:oncall`` or ``user:alice or role:security decides``."""
    if not data["stages"]:
        text = f"{_who(data['approvers'], call.principal)} decides"
    else:
        voted = f" ({', '.join(data['voted'])} voted)" if data["voted"] else ""
        more = f"{data['remaining']} more from {_who(data['others'], call.principal)}"
        text = (
            f"stage {data['stage']} of {data['stages']}: {data['votes']} of {data['needed']} "
            f"votes{voted}, {more}"
        )
        for later in data["later"]:
            text += f"; then {later['min']} of {_who(later['approvers'], call.principal)}"
        text += f" ({data['remaining_total']} vote(s) to go)"
    if data["break_glass"]:
        text += f"; break-glass: {', '.join(data['break_glass'])}"
    return text
