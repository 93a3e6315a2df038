"""A host's own function reviewed by a human, on record in the gateway.

The ``human_in_the_loop`` decorators review calls of plain Python functions that the gateway
never runs. When they are given a gateway, each review is a pending call in its store, so it is
audited, evented and shown on the approvals page, where an approver may decide it too:

- the record is opened (or found again: a graph re-runs the tool on resume) as the calling
  principal, for a tool named ``hitl:<name>`` that no gateway call can match;
- the reviewer's answer in the graph is the caller's decision (the rule's approvers are
  ``caller``, so any gateway approver may decide as well);
- an approved call is claimed (exactly once), run by the host and its outcome recorded.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from langchain_core.tools import ToolException

from gateway.approvals.human_interrupt import ReviewAnswer
from gateway.approvals.pending import PendingCall
from gateway.approvals.wire import result_from_wire, result_to_wire
from gateway.gateway import Gateway
from toolsets.context import CallContext, Principal
from toolsets.decision import ApprovalOptions, Decision, DecisionKind
from toolsets.errors import ApprovalConflict
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["Ledger", "Plan", "Refused", "Run", "Say", "plan_of_record"]

SERVER = "hitl"
DECISIONS: frozenset[DecisionKind] = frozenset({"approve", "edit", "respond", "deny"})


@dataclass(frozen=True, slots=True)
class Run:
    """Run the function with ``args``."""

    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Say:
    """Return ``text`` instead of running the function."""

    text: str


@dataclass(frozen=True, slots=True)
class Refused:
    """Do not run the function; ``message`` says why."""

    message: str


Plan = Run | Say | Refused


def plan_of_record(call: PendingCall) -> Plan | None:
    """What a decided record says to do; None while it waits for a decision."""
    if call.state == "pending":
        return None
    if call.state == "approved":
        return Run(call.effective_args)
    if call.state == "done" and call.decision == "respond":
        return Say(call.message or "")
    if call.state == "denied":
        return Refused(call.message or "The call was denied.")
    if call.state in {"done", "failed"} and call.result is not None:
        result = result_from_wire(call.result)  # a run already recorded: never run it twice
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return Refused(text) if result.is_error else Say(text)
    return Refused(f"Call {call.id} is {call.state}; not executed.")


@dataclass(slots=True, kw_only=True)
class Ledger:
    """The gateway records of one reviewed function, for one principal."""

    gateway: Gateway
    principal: Principal
    tool: ToolDef

    @classmethod
    def of(
        cls,
        gateway: Gateway,
        principal: Principal,
        name: str,
        description: str,
        schema: Mapping[str, Any],
    ) -> Ledger:
        tool = ToolDef(
            name=f"{SERVER}:{name}",
            description=description,
            input_schema=dict(schema),
            server=SERVER,
            upstream_name=name,
        )
        gateway.approvals.register_reviewed(tool)
        return cls(gateway=gateway, principal=principal, tool=tool)

    async def open(self, args: Mapping[str, Any]) -> PendingCall:
        """The record of this review: the one a paused graph opened, or a new one."""
        reason = f"a person reviews each call of {self.tool.upstream_name} (human_in_the_loop)"
        options = ApprovalOptions(approvers=("caller",), decisions=DECISIONS)
        decision = Decision(effect="ask", rule_id=None, reason=reason, approval=options)
        ctx = CallContext(principal=self.principal)
        return await self.gateway.approvals.request(self.tool, args, ctx, decision)

    async def decide(self, call: PendingCall, answer: ReviewAnswer) -> PendingCall:
        """Put the reviewer's answer on record; the record as it stands after (if someone
        decided first, theirs).

        Raises:
            DecisionRefused: an edit the function's schema refuses.
        """
        with contextlib.suppress(ApprovalConflict):
            return await self.gateway.approvals.decide(
                call.id,
                answer.decision,
                by=self.principal,
                channel="langgraph",
                message=answer.message,
                args=answer.args,
                as_caller=True,
            )
        return await self.gateway.approvals.get(call.id)

    async def run(
        self,
        call: PendingCall,
        args: dict[str, Any],
        run: Callable[[dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Run an approved record's call exactly once and record its outcome; if another run
        claimed it first, what that one recorded.

        Raises:
            ToolException: the record says not to run (denied, failed...).
        """
        try:
            claimed = await self.gateway.store.transition(
                call.id, expect={"approved"}, to="executing"
            )
        except ApprovalConflict:
            plan = plan_of_record(await self.gateway.approvals.get(call.id))
            if isinstance(plan, Say):
                return plan.text
            raise ToolException(getattr(plan, "message", f"Call {call.id} is running.")) from None
        try:
            output = await run(args)
        except Exception as exc:
            await self._finish(claimed, ToolResult.error(f"{type(exc).__name__}: {exc}"))
            raise
        await self._finish(claimed, ToolResult.text(_text(output)))
        return output

    async def _finish(self, call: PendingCall, result: ToolResult) -> None:
        with anyio.CancelScope(shield=True):
            await self.gateway.store.transition(
                call.id,
                expect={"executing"},
                to="failed" if result.is_error else "done",
                result=result_to_wire(result),
                delivered=True,
            )


def _text(output: Any) -> str:
    """A tool's output as text for the gateway's record."""
    return output if isinstance(output, str) else json.dumps(output, default=str)
