"""A held call in traces: the hold span (from the request to the decision, an event per vote)
and, on the call that picks up a held call's outcome, the link to the trace that held it.

The hold span is written when the decision is stored (`HoldSpans`, a pending-store listener),
from the record alone: its start is the record's creation, its parent the ``traceparent`` the
record kept; so it is right whichever process or restart decides. `HeldMarks` annotates the call
running now with the approval it met.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from opentelemetry.trace import Link, Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

from gateway.approvals.pending import PendingCall
from gateway.approvals.writes import PendingListener
from gateway.telemetry import attributes as attr
from gateway.telemetry.current import call_span
from gateway.telemetry.propagation import link_to, parent_context
from toolsets import trace_context

__all__ = ["HOLD_SPAN", "HeldMarks", "HoldSpans"]

HOLD_SPAN: Final = "lockgate.hold"
_DECIDED: Final = frozenset({"approved", "denied", "expired", "cancelled"})
_AFTER_RUN: Final = frozenset({"approve", "edit"})
"""Decisions whose call then runs: its later writes (executing, done) are not the decision."""


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _is_decision(call: PendingCall) -> bool:
    """Whether this write is the one that ended the wait (decided, expired, a worker's answer)."""
    if call.state in _DECIDED:
        return True
    return call.state in {"done", "failed"} and call.decision not in _AFTER_RUN


class HoldSpans:
    """A pending-store listener that writes each traced call's hold span, then tells ``then``."""

    def __init__(self, tracer: Tracer, then: PendingListener) -> None:
        self.tracer = tracer
        self.then = then

    async def __call__(self, call: PendingCall) -> None:
        if call.traceparent is not None and _is_decision(call):
            self.write(call)
        await self.then(call)

    def write(self, call: PendingCall) -> None:
        """The hold span of ``call``, ended at its decision."""
        span = self.tracer.start_span(
            HOLD_SPAN,
            context=parent_context({"traceparent": call.traceparent or ""}),
            kind=SpanKind.INTERNAL,
            start_time=_ns(call.created_at),
            attributes={
                attr.APPROVAL_ID: call.id,
                attr.APPROVAL_STATE: call.state,
                attr.TOOL_NAME: call.tool,
                attr.DECISION: call.decision or "",
                attr.APPROVER: call.decided_by or "",
                **({attr.RULE: call.rule_id} if call.rule_id else {}),
            },
        )
        for vote in call.votes:
            voted: dict[str, AttributeValue] = {
                attr.APPROVER: vote.by,
                "lockgate.stage": vote.stage,
            }
            voted["lockgate.channel"] = vote.channel
            span.add_event("vote", voted, _ns(vote.at))
        decided: dict[str, AttributeValue] = {
            attr.DECISION: call.decision or "",
            attr.APPROVER: call.decided_by or "",
        }
        decided["lockgate.channel"] = call.channel or ""
        span.add_event("decision", decided, _ns(call.updated_at))
        span.end(end_time=_ns(max(call.updated_at, call.created_at)))


def _linked(span: Span, span_id: int) -> bool:
    """Whether ``span`` (an SDK span, which lists its links) already links to ``span_id``."""
    links: Sequence[Link] = getattr(span, "links", ())
    return any(link.context.span_id == span_id for link in links)


class HeldMarks:
    """Implements `gateway.approvals.holding.HeldObserver`: the call running now names the
    approval it met, its approver, and links to the trace that held it when that is another."""

    def __call__(self, call: PendingCall) -> None:
        root = call_span()
        if not root.is_recording():
            return
        root.set_attribute(attr.APPROVAL_ID, call.id)
        if call.decided_by is not None:
            root.set_attribute(attr.APPROVER, call.decided_by)
        held_by = call.traceparent
        if held_by is None or held_by == trace_context.traceparent():
            return  # held by this very call: no link to itself
        link = link_to(held_by)
        if link is None or _linked(root, link.context.span_id):
            return  # observed twice (found, then picked up): one link
        root.add_link(link.context, {"lockgate.link": "held_call"})
