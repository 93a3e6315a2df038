"""Constructors for each event type; every one redacts before the event exists.

Call events share ``call_id``, ``tool``, ``server``, ``upstream_tool``, ``principal`` (the id only;
claims may hold secrets) and ``session_id``. Arguments are masked along the decision's ``redact``
paths and for credential-looking values; responses and messages for credential-looking values.
The resource and prompt events are built in `gateway.events.resource_events`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from gateway.events.model import GAP, RESET, Event
from gateway.events.redact import mask_values, redact, values_at
from toolsets.canonical import sha256_hex
from toolsets.context import CallContext
from toolsets.inspected import FINDINGS_META
from toolsets.rate_limited import RETRY_AFTER_META
from toolsets.rates import RateLimit
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = [
    "ALLOW",
    "DecisionLike",
    "SimpleDecision",
    "UpstreamState",
    "approval_break_glass",
    "approval_requested",
    "approval_resolved",
    "approval_vote",
    "decision_data",
    "gap",
    "grant_created",
    "grant_revoked",
    "pin_accepted",
    "pin_changed",
    "reset",
    "response_data",
    "tool_call",
    "tool_deferred",
    "tool_denied",
    "tool_rate_limited",
    "tool_result",
    "tools_changed",
    "upstream_status",
]

UpstreamState = Literal["up", "down", "reconnecting"]


class DecisionLike(Protocol):
    """What events need of a policy decision; `toolsets.decision.Decision` fits as is."""

    @property
    def effect(self) -> str: ...
    @property
    def rule_id(self) -> str | None: ...
    @property
    def redact(self) -> tuple[str, ...]: ...


class SimpleDecision:
    """A `DecisionLike` for callers without a policy engine (tests, local toolsets)."""

    __slots__ = ("effect", "redact", "rule_id")

    def __init__(self, effect: str, rule_id: str | None = None, redact: tuple[str, ...] = ()):
        self.effect, self.rule_id, self.redact = effect, rule_id, redact


ALLOW = SimpleDecision("allow")
"""The decision assumed when no policy said anything."""


def _call(tool: ToolDef, ctx: CallContext) -> dict[str, Any]:
    data = {
        "call_id": ctx.call_id,
        "tool": tool.name,
        "server": tool.server,
        "upstream_tool": tool.upstream_name,
        "principal": ctx.principal.id,
        "session_id": ctx.session_id,
    }
    if ctx.principal.tenant is not None:
        data["tenant"] = ctx.principal.tenant
    if ctx.parent_call_id is not None:
        data["parent_call_id"] = ctx.parent_call_id
    return data


def _shadow(match: Any) -> dict[str, Any]:
    """A `ShadowMatch`; ``rate_limited`` when its limit would have refused the call."""
    data = {"rule_id": match.rule_id, "effect": match.effect, "reason": redact(match.reason)}
    if match.retry_after is not None:
        data["rate_limited"] = {"limit": match.limit.to_json(), "retry_after": match.retry_after}
    return data


def _decision(decision: DecisionLike) -> dict[str, Any]:
    data: dict[str, Any] = {"effect": decision.effect, "rule_id": decision.rule_id}
    shadow = getattr(decision, "shadow", ())  # what shadow rules would have decided, if any
    if shadow:
        data["shadow"] = [_shadow(match) for match in shadow]
    grant = getattr(decision, "grant", None)  # a standing grant answered the ``ask``
    if grant is not None:
        data["grant"] = grant
    labels = getattr(decision, "labels", None)  # data-flow labels: the tool's, the session's
    if labels:
        data["labels"] = labels.to_json()
    findings = getattr(decision, "findings", ())  # content inspection of the arguments
    if findings:
        data["findings"] = [finding.to_json() for finding in findings]
    return data


def decision_data(decision: DecisionLike) -> dict[str, Any]:
    """A decision as events carry it (``effect``, ``rule_id``, shadow matches, grant)."""
    return _decision(decision)


def _with_args(
    tool: ToolDef, ctx: CallContext, args: Mapping[str, Any], decision: DecisionLike
) -> dict[str, Any]:
    data = _call(tool, ctx)
    data["args"] = redact(args, decision.redact)
    data["args_sha256"] = sha256_hex(args)
    data["decision"] = _decision(decision)
    return data


def tool_call(
    tool: ToolDef, ctx: CallContext, args: Mapping[str, Any], decision: DecisionLike = ALLOW
) -> Event:
    """``tool.call``: the call is about to be forwarded; ``args_sha256`` covers unredacted args."""
    return Event(type="tool.call", data=_with_args(tool, ctx, args, decision))


def response_data(result: ToolResult, secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """A result in MCP wire form (``content`` blocks and ``structuredContent``), redacted.

    ``secrets`` are values masked wherever they appear (the call's policy-redacted arguments).
    """
    wire = result.wire
    data = {"content": wire["content"], "structuredContent": wire.get("structuredContent")}
    return mask_values(redact(data), secrets)  # type: ignore[no-any-return]


def tool_result(
    tool: ToolDef,
    ctx: CallContext,
    result: ToolResult,
    duration_ms: float,
    decision: DecisionLike = ALLOW,
    *,
    args: Mapping[str, Any] | None = None,
) -> Event:
    """``tool.result``: the call returned (``is_error`` results included).

    With the call's ``args``, values the decision redacts there are masked in the response too.
    """
    data = _call(tool, ctx)
    secrets = values_at(args, decision.redact) if args and decision.redact else ()
    data["response"] = response_data(result, secrets)
    data["is_error"] = result.is_error
    data["duration_ms"] = round(duration_ms, 3)
    data["decision"] = _decision(decision)
    found = (result.meta or {}).get(FINDINGS_META)  # content inspection of the result
    if found:
        data["findings"] = found
    return Event(type="tool.result", data=data)


def tool_denied(
    tool: ToolDef, ctx: CallContext, args: Mapping[str, Any], decision: DecisionLike, message: str
) -> Event:
    """``tool.denied``: the policy refused the call; ``message`` is what the model reads."""
    data = _with_args(tool, ctx, args, decision)
    data["message"] = redact(message)
    return Event(type="tool.denied", data=data)


def tool_rate_limited(
    tool: ToolDef,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: DecisionLike,
    *,
    limit: RateLimit,
    result: ToolResult,
) -> Event:
    """``tool.rate_limited``: the policy allowed the call but ``limit`` refused it (it never
    ran); ``message`` is what the model reads, ``retry_after`` the seconds it was told."""
    data = _with_args(tool, ctx, args, decision)
    data["message"] = result.first_text()
    data["limit"] = limit.to_json()
    data["retry_after"] = (result.meta or {}).get(RETRY_AFTER_META)
    return Event(type="tool.rate_limited", data=data)


def approval_requested(
    tool: ToolDef,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: DecisionLike,
    *,
    approval_id: str,
    reason: str = "",
    expires_at: str | None = None,
    hold_seconds: float | None = None,
    context: Mapping[str, Any] | None = None,
) -> Event:
    """``tool.approval.requested``: the call is held until an approver decides (the caller
    waits up to ``hold_seconds`` before it is answered "pending"). ``context`` is the call's
    context pack as a notice may carry it (`gateway.approvals.context_pack.notice`: no argument
    values); without one, the event's ``context`` has the tool and the client only. Values the
    decision redacts in the arguments are masked in it too."""
    data = _with_args(tool, ctx, args, decision)
    data.update(approval_id=approval_id, reason=redact(reason), expires_at=expires_at)
    data.update(hold_seconds=hold_seconds, tool_context=_tool_context(tool, ctx))
    secrets = values_at(args, decision.redact) if decision.redact else ()
    shown = context if context is not None else _bare_context(tool, ctx, data["tool_context"])
    data["context"] = mask_values(redact(dict(shown)), secrets)
    return Event(type="tool.approval.requested", data=data)


_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_DESCRIPTION_CUT = 300


def _tool_context(tool: ToolDef, ctx: CallContext) -> dict[str, Any]:
    """What a notification tells an approver of the tool and the client asking: the start of
    the tool's description, its hints (the server's own claims) and the client's name."""
    annotations = tool.annotations or {}
    description = " ".join((tool.description or "").split())
    if len(description) > _DESCRIPTION_CUT:
        description = description[:_DESCRIPTION_CUT] + "…"
    return {
        "description": description or None,
        "hints": {hint: annotations[hint] for hint in _HINTS if hint in annotations},
        "flags": list(tool.flags),
        "client": {"name": ctx.client.name, "version": ctx.client.version},
    }


def _bare_context(tool: ToolDef, ctx: CallContext, facts: Mapping[str, Any]) -> dict[str, Any]:
    """A context pack's shape for what the event itself knows: the tool and the client asking
    (the event names the principal)."""
    about = {"name": tool.name, "server": tool.server, "description": facts["description"]}
    about.update(annotations=facts["hints"], flags=facts["flags"])
    return {"tool": about, "caller": {"client": facts["client"]}}


def approval_resolved(
    tool: ToolDef,
    ctx: CallContext,
    *,
    approval_id: str,
    decision: str,
    decided_by: str,
    channel: str,
    message: str | None = None,
    grant: str | None = None,
) -> Event:
    """``tool.approval.resolved``: ``decision`` is approve/deny/edit/respond/expired/cancelled;
    ``grant``: the grant the approval made, if any."""
    data = _call(tool, ctx)
    data.update(
        approval_id=approval_id,
        decision=decision,
        decided_by=decided_by,
        channel=channel,
        message=None if message is None else redact(message),
    )
    if grant is not None:
        data["grant"] = grant
    return Event(type="tool.approval.resolved", data=data)


def approval_vote(
    tool: ToolDef,
    ctx: CallContext,
    *,
    approval_id: str,
    by: str,
    channel: str,
    stage: int,
    votes: int,
    needed: int,
    stages: int,
) -> Event:
    """``tool.approval.vote``: one approving vote of a staged approval that did not decide it
    (``votes`` of the ``needed`` in stage ``stage``, 0-based, of ``stages``)."""
    data = _call(tool, ctx)
    data.update(approval_id=approval_id, by=by, channel=channel, stage=stage, votes=votes)
    data.update(needed=needed, stages=stages)
    return Event(type="tool.approval.vote", data=data)


def approval_break_glass(
    tool: ToolDef,
    ctx: CallContext,
    *,
    approval_id: str,
    by: str,
    reason: str,
    channel: str,
    skipped: int,
) -> Event:
    """``tool.approval.break_glass``: ``by`` approved at once, giving ``reason``, skipping
    ``skipped`` stages still undecided (0 for a call without stages)."""
    data = _call(tool, ctx)
    data.update(approval_id=approval_id, by=by, reason=redact(reason), channel=channel)
    data.update(skipped_stages=skipped)
    return Event(type="tool.approval.break_glass", data=data)


def grant_created(grant: Mapping[str, Any]) -> Event:
    """``tool.grant.created``: an approval made a standing grant (its JSON; see
    `gateway.approvals.grants.Grant`)."""
    return Event(type="tool.grant.created", data=dict(grant))


def grant_revoked(grant: Mapping[str, Any]) -> Event:
    """``tool.grant.revoked``: an approver revoked a grant (``revoked_by`` says who)."""
    return Event(type="tool.grant.revoked", data=dict(grant))


def tool_deferred(
    tool: ToolDef,
    ctx: CallContext,
    args: Mapping[str, Any],
    decision: DecisionLike,
    *,
    pending_id: str,
) -> Event:
    """``tool.deferred``: the call waits for an external executor to post its result."""
    data = _with_args(tool, ctx, args, decision)
    data["pending_id"] = pending_id
    return Event(type="tool.deferred", data=data)


def tools_changed(
    before: Mapping[str, str], after: Mapping[str, str], *, server: str | None = None
) -> Event | None:
    """``tools.changed`` from two ``{name: pin}`` catalogues, or None when nothing changed."""
    added = [{"name": n, "pin": after[n]} for n in sorted(after.keys() - before.keys())]
    removed = [{"name": n, "pin": before[n]} for n in sorted(before.keys() - after.keys())]
    changed = [
        {"name": n, "old_pin": before[n], "pin": after[n]}
        for n in sorted(before.keys() & after.keys())
        if before[n] != after[n]
    ]
    if not (added or removed or changed):
        return None
    data = {"server": server, "added": added, "removed": removed, "changed": changed}
    return Event(type="tools.changed", data=data)


def pin_changed(record: Mapping[str, Any], action: str) -> Event:
    """``tool.pin_changed``: a served definition differs from its pin; ``action`` is what
    ``pins.on_change`` did (``quarantine``, ``warn``, ``accept``); ``diff`` shows the change."""
    return Event(type="tool.pin_changed", data={**record, "action": action})


def pin_accepted(record: Mapping[str, Any], by: str) -> Event:
    """``tool.pin_accepted``: an approver accepted a quarantined definition."""
    return Event(type="tool.pin_accepted", data={**record, "by": by})


def upstream_status(server: str, status: UpstreamState, *, error: str | None = None) -> Event:
    """``upstream.status``: an upstream server came up, went down or is reconnecting."""
    data = {"server": server, "status": status, "error": None if error is None else redact(error)}
    return Event(type="upstream.status", data=data)


def gap(missed: int) -> Event:
    """``lockgate.gap``: ``missed`` events were dropped for this subscriber."""
    return Event(type=GAP, data={"missed": missed})


def reset(last_event_id: str) -> Event:
    """``lockgate.reset``: ``last_event_id`` is no longer in the replay buffer."""
    return Event(type=RESET, data={"last_event_id": last_event_id, "reason": "id not in buffer"})
