"""How one approval reads for people: ``approvals show`` as labelled lines, and each call's
outcome (did an approved call run, and how did it end) for the history table."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from gateway.cli._rest import ago, aligned, iso
from gateway.cli.context_view import context_rows

__all__ = ["HISTORY_STATES", "details", "history_table", "outcome"]

HISTORY_STATES: Final = "approved,executing,done,failed,denied,expired,cancelled"
"""Every state a decided (or lapsed) call can be in: ``approvals list --history``."""
_FAILURE_WIDTH: Final = 200


def outcome(call: Mapping[str, Any]) -> str:
    """Whether the call ran and how it ended, in a few words."""
    state, decision = call["state"], call.get("decision")
    if state in _NOT_RUN:
        return _NOT_RUN[state]
    if decision == "respond":
        return "not run: answered with the approver's text"
    if decision in {"result", "error"}:  # a deferred call: a worker posted its outcome
        return f"{state}: posted by {call.get('decided_by')}" + _failure(call)
    if state == "done":
        return "ran: done"
    ran = "ran: " if call.get("result") is not None else ""
    return f"{ran}failed" + _failure(call)


_NOT_RUN: Final = {
    "pending": "waiting for a decision",
    "approved": "approved, not run yet: runs when the caller re-issues the call",
    "executing": "running now",
    "denied": "not run: denied",
    "expired": "not run: expired without a decision",
    "cancelled": "not run: cancelled",
}


def _failure(call: Mapping[str, Any]) -> str:
    """``: the error text`` of a failed call (its error, else its result's text)."""
    if call["state"] != "failed":
        return ""
    text = call.get("error") or _result_text(call.get("result"))
    return f": {' '.join(text.split())[:_FAILURE_WIDTH]}" if text else ""


def _result_text(result: Any) -> str:
    if not isinstance(result, Mapping):
        return ""
    blocks = result.get("content") or []
    return " ".join(b.get("text", "") for b in blocks if isinstance(b, Mapping))


def details(call: Mapping[str, Any], now: float) -> str:
    """``approvals show``: the call as labelled lines, its arguments pretty-printed last."""
    rows = [
        ("state", _state(call, now)),
        ("tool", f"{call['tool']} (server {call['server']})"),
        ("caller", _caller(call)),
        ("rule", f"{call.get('rule_id') or 'default'}: {call.get('reason') or '-'}"),
        ("approvers", _approvers(call)),
        ("requested", iso(call["created_at"])),
        ("expires", iso(call["expires_at"])),
    ]
    rows += _decision_rows(call)
    rows += context_rows(call.get("context") or {})
    lines = [call["id"], *(f"  {line}" for line in aligned(rows))]
    lines += _args_block("arguments", call["args"])
    if call.get("override_args") is not None:
        lines += _args_block("edited arguments (these run)", call["override_args"])
    return "\n".join(lines)


def _state(call: Mapping[str, Any], now: float) -> str:
    if call["state"] != "pending":
        return str(call["state"])
    left = ago(call["expires_at"], now).removeprefix("in ")
    waiting = "the caller is waiting" if call.get("waiting") else "the caller was told 'pending'"
    return f"pending, {left} left ({waiting})"


def _caller(call: Mapping[str, Any]) -> str:
    session = call.get("session_id")
    return str(call["principal"]) + (f" (session {session})" if session else "")


def _approvers(call: Mapping[str, Any]) -> str:
    """Who may decide, the votes cast and how many remain, as the context pack says it."""
    deciding = (call.get("context") or {}).get("deciding") or {}
    if call["state"] == "pending" and deciding.get("text"):
        return str(deciding["text"])
    return ", ".join(call.get("approvers") or []) or "any approver"


def _decision_rows(call: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if call.get("decided_by"):
        by = f"{call.get('decision')} by {call['decided_by']} via {call.get('channel') or '-'}"
        rows.append(("decided", by))
    if call.get("message"):
        rows.append(("message", call["message"]))
    if call["state"] != "pending":
        rows += [("outcome", outcome(call)), ("updated", iso(call["updated_at"]))]
    if call.get("grant_id"):
        rows.append(("grant", call["grant_id"]))
    return rows


def _args_block(title: str, args: Any) -> list[str]:
    text = json.dumps(args, indent=2, ensure_ascii=True, sort_keys=True)
    return [f"  {title}:", *(f"    {line}" for line in text.splitlines())]


def _decider(call: Mapping[str, Any]) -> str:
    decision, by = call.get("decision") or "-", call.get("decided_by")
    return f"{decision} by {by}" if by else decision


def history_table(calls: list[dict[str, Any]], now: float) -> list[str]:
    """Decided calls as an aligned table: who decided, and whether the call then ran."""
    header = ("ID", "WHEN", "TOOL", "CALLER", "DECISION", "OUTCOME")
    rows = [header] + [
        (
            call["id"],
            ago(call["updated_at"], now),
            call["tool"],
            call["principal"],
            _decider(call),
            outcome(call),
        )
        for call in calls
    ]
    return aligned(rows)
