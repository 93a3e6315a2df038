"""`context_pack`: what an approver needs to decide a held call well, beside the call itself.

What the tool does (title, description, annotations and how far to trust them, its warning
flags), why the call was held (the rule, where it is written, its conditions as written, its
reason), the arguments in canonical form with their digest, who is asking (the principal and
what the client says it is), and what the session did before (its recent calls and the data
flow labels it carries), when (absolute and relative times) and who else may decide (the
approvers, the votes cast and how many remain). The page, ``lockgate approvals show`` and the REST
API read it from ``GET /api/approvals/{id}`` (``context``); the ``tool.approval.requested`` event
carries its `notice` (no argument values), which Slack text and LangGraph interrupt descriptions
render with `gateway.approvals.context_text`.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Final, Protocol

from gateway.approvals.context_deciders import deciding
from gateway.approvals.known_tools import KnownTools
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import origin_of
from policies.condition_trace import ConditionPart, condition_words, trace_when
from policies.engine import PolicyEngine
from policies.preview import Preview
from policies.rules import CompiledRule
from policies.session import SessionState
from policies.where import where as rule_where
from toolsets.canonical import canonical_json
from toolsets.context import CallContext, Principal
from toolsets.tooldef import ToolDef

__all__ = ["RECENT_CALLS", "PreviewRun", "SessionLookup", "context_pack", "notice"]

RECENT_CALLS: Final = 10
"""How many of the session's last calls the pack shows."""
_HINTS: Final = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


class PreviewRun(Protocol):
    """Runs a held call's preview (`gateway.approvals.preview.PreviewRunner`)."""

    async def __call__(self, call: PendingCall, preview: Preview) -> dict[str, Any]: ...


class SessionLookup(Protocol):
    """Loads the state of a call's session (`gateway.sessions.book.SessionBook.ensure`)."""

    async def __call__(self, ctx: CallContext) -> SessionState: ...


async def context_pack(
    call: PendingCall,
    *,
    tools: KnownTools,
    engine: PolicyEngine,
    session: SessionLookup | None = None,
    preview: PreviewRun | None = None,
) -> dict[str, Any]:
    """The context of ``call`` for its approvers (see the module docstring); with ``preview``,
    a waiting call whose rule names a preview tool gets its result (``preview``)."""
    tool = await tools.current(call.tool)
    state = None
    if session is not None and call.session_id is not None:
        state = await session(origin_of(call))
    pack = {
        "tool": _tool(call, tool),
        "rule": _rule(call, engine, tool, state),
        "arguments": {"canonical": canonical_json(call.args).decode(), "sha256": call.args_sha256},
        "caller": {
            "principal": call.principal,
            "roles": list(call.principal_roles),
            "tenant": call.tenant,
            "client": call.client,
        },
        "session": _session(call, state),
        "times": _times(call, time.time()),
        "deciding": deciding(call),
    }
    rule = _rule_of(call, engine)
    if preview is not None and rule is not None and rule.preview and call.state == "pending":
        pack["preview"] = await preview(call, rule.preview)
    return pack


def _rule_of(call: PendingCall, engine: PolicyEngine) -> CompiledRule | None:
    if call.rule_id is None:
        return None
    try:
        return engine.rule(call.rule_id)
    except KeyError:  # the policy was reloaded without it since
        return None


def _tool(call: PendingCall, tool: ToolDef | None) -> dict[str, Any]:
    if tool is None:
        return {"name": call.tool, "server": call.server, "known": False}
    annotations = dict(tool.annotations or {})
    return {
        "name": tool.name,
        "server": tool.server,
        "known": True,
        "title": tool.title or annotations.get("title"),
        "description": tool.description,
        "annotations": {hint: annotations[hint] for hint in _HINTS if hint in annotations},
        "annotations_trust": f"declared by server {tool.server!r}: hints it gives about "
        "itself, not verified by the gateway",
        "flags": list(tool.flags),
        "definition_changed": tool.pin != call.tool_pin,
    }


def _rule(
    call: PendingCall, engine: PolicyEngine, tool: ToolDef | None, state: SessionState | None
) -> dict[str, Any]:
    if call.rule_id is None:
        return {"id": None, "text": f"no rule matched: the policy's default ({call.reason})"}
    rule = _rule_of(call, engine)
    if rule is None:
        return {"id": call.rule_id, "text": f"rule {call.rule_id!r} (no longer in the policy)"}
    parts = _trace(call, rule, engine, tool, state)
    where = rule_where(rule.file, rule.line, engine.root)
    text = f"rule {rule.id!r} ({where}) holds calls of {', '.join(rule.tools or ('any tool',))}"
    condition = condition_words(rule, parts)
    return {
        "id": rule.id,
        "where": where,
        "when": rule.when.source if rule.when is not None else None,
        "unless": rule.unless.source if rule.unless is not None else None,
        "matched": [{"part": part.source, "held": part.held} for part in parts],
        "condition": condition or None,
        "reason": call.reason,
        "text": text + (f" {condition}" if condition else "") + f": {call.reason}",
    }


def _trace(
    call: PendingCall,
    rule: CompiledRule,
    engine: PolicyEngine,
    tool: ToolDef | None,
    state: SessionState | None,
) -> tuple[ConditionPart, ...]:
    """Which ``||`` part of the rule's ``when`` holds the call (checked again now: a part
    reading a claim of the caller, which the call does not keep, cannot be)."""
    if tool is None or rule.when is None:
        return ()
    who = Principal(id=call.principal, roles=frozenset(call.principal_roles), tenant=call.tenant)
    return trace_when(rule, tool, call.args, who, state, labels=engine.tool_labels(tool))


def _session(call: PendingCall, state: SessionState | None) -> dict[str, Any]:
    if state is None:
        return {"id": call.session_id, "recent": [], "labels": {}}
    return {
        "id": call.session_id,
        "calls": state.calls,
        "recent": _before(call, state.history)[-RECENT_CALLS:],
        "labels": {name: list(tools) for name, tools in state.label_book.cel_sources().items()},
    }


def _times(call: PendingCall, now: float) -> dict[str, Any]:
    return {
        "requested": _iso(call.created_at),
        "expires": _iso(call.expires_at),
        "as_of": _iso(now),
        "waited_seconds": max(round(now - call.created_at), 0),
        "left_seconds": max(round(call.expires_at - now), 0),
    }


def notice(pack: dict[str, Any]) -> dict[str, Any]:
    """What of ``pack`` a notification may carry: no argument values (the canonical arguments
    and the preview's result are left out; the digest stays), the session's recent calls by
    tool and outcome only."""
    session = pack.get("session") or {}
    recent = [{"tool": c.get("tool"), "ok": c.get("ok", True)} for c in session.get("recent", [])]
    shown = {key: value for key, value in pack.items() if key not in {"arguments", "preview"}}
    shown["arguments"] = {"sha256": (pack.get("arguments") or {}).get("sha256")}
    shown["session"] = {**session, "recent": recent}
    return shown


def _before(call: PendingCall, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's calls before ``call``: its own entry, once the caller was answered
    "pending" (recorded as not ok), is left out."""
    calls = [dict(entry) for entry in history]
    for index in range(len(calls) - 1, -1, -1):
        entry = calls[index]
        if (entry.get("tool"), entry.get("args_sha256")) == (call.tool, call.args_sha256):
            if not entry.get("ok", True):
                del calls[index]
            break
    return calls


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")
