"""`ApprovalRequiredToolset`: the policy decides; risky calls wait for a human or a worker.

It lives with the approval machinery (not in ``toolsets/``) because it depends on the policy
engine and the pending-call store; ``toolsets`` stays free of gateway dependencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio

from gateway.approvals.elicit import ask_caller
from gateway.approvals.errors import PendingConflict
from gateway.approvals.pending import PendingCall
from gateway.approvals.service import ApprovalService, DecisionRefused, TooManyPending
from gateway.events import types as events
from gateway.external import EXTERNAL_SERVER
from policies import Decision, PolicyHolder, SessionState
from toolsets.abstract import Toolset
from toolsets.context import CallContext, Principal
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["ApprovalRequiredToolset", "InputRequired"]

MAX_SESSIONS = 10_000


class InputRequired(Exception):
    """The modern-era caller must answer an approval question; the MCP face seals and asks."""

    def __init__(self, call: PendingCall, tool: ToolDef) -> None:
        super().__init__(call.id)
        self.call = call
        self.tool = tool


class _Visible:
    """The catalogue filtered by list-time policy, cached per principal and catalogue version."""

    def __init__(self) -> None:
        # The source catalogue is kept (not its id) so a new catalogue can never pass for it.
        self._cache: dict[tuple[str, frozenset[str], str], tuple[object, dict[str, ToolDef]]] = {}

    def get(
        self, source: dict[str, ToolDef], principal: Principal, holder: PolicyHolder
    ) -> dict[str, ToolDef]:
        engine = holder.current
        key = (principal.id, principal.roles, engine.version)
        cached = self._cache.get(key)
        if cached is not None and cached[0] is source:
            return cached[1]
        visible = {
            name: tool
            for name, tool in source.items()
            if engine.evaluate_visibility(tool, principal).effect != "hide"
        }
        if len(self._cache) > 1024:
            self._cache.clear()
        self._cache[key] = (source, visible)
        return visible


class ApprovalRequiredToolset(WrapperToolset):
    """Applies `evaluate_visibility` to listing and `evaluate_call` to every call."""

    def __init__(self, wrapped: Toolset, policy: PolicyHolder, service: ApprovalService) -> None:
        super().__init__(wrapped)
        self.policy = policy
        self.service = service
        self._visible = _Visible()
        self._sessions: dict[str, SessionState] = {}

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self._visible.get(await self.wrapped.get_tools(ctx), ctx.principal, self.policy)

    def _session(self, ctx: CallContext) -> SessionState:
        key = f"{ctx.principal.id}:{ctx.session_id or ''}"
        state = self._sessions.get(key)
        if state is None:
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            state = self._sessions[key] = SessionState(ctx.session_id or key)
        return state

    async def asks_caller(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> bool:
        """Whether calling ``name`` now would ask the calling user (elicitation) to decide.

        A pure look-ahead (the session's counters are read, not advanced): transports that
        have no back-channel for a request can tell in advance that they need one.
        """
        tool = (await self.wrapped.get_tools(ctx)).get(name)
        if tool is None:
            return False
        decision = self.policy.current.evaluate_call(tool, args, ctx.principal, self._session(ctx))
        return decision.effect == "ask" and "caller" in decision.approval.approvers

    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        tool = (await self.wrapped.get_tools(ctx)).get(name)
        if tool is None:
            raise ToolNotFoundError(name)
        session = self._session(ctx)
        decision = self.policy.current.evaluate_call(tool, args, ctx.principal, session)
        if tool.server == EXTERNAL_SERVER and decision.effect == "allow":
            decision = replace(decision, effect="defer")  # no upstream: a worker answers
        ctx = replace(ctx, decision=decision)
        if decision.effect == "hide":
            raise ToolNotFoundError(name)
        if decision.effect == "deny":
            message = decision.message or f"Denied by policy: {decision.reason}"
            return await self._refuse(tool, args, ctx, message)
        if decision.effect == "allow":
            result = await self.wrapped.call_tool(name, args, ctx)
        else:
            result = await self._held(tool, args, ctx, decision)
        session.record(name, args)
        return result

    async def _held(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
    ) -> ToolResult:
        try:
            call = await self.service.request(tool, args, ctx, decision)
        except TooManyPending as exc:
            return await self._refuse(tool, args, ctx, str(exc))
        hold = decision.approval.hold
        deadline = anyio.current_time() + hold
        if call.state == "pending" and call.kind == "approval" and "caller" in call.approvers:
            # The hold bounds the wait for the caller's answer too.
            with anyio.move_on_after(hold):
                call = await self._ask_caller(call, tool, ctx)
            hold = max(deadline - anyio.current_time(), 0.0)
        return await self.service.settle(call, ctx, hold)

    async def _refuse(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, message: str
    ) -> ToolResult:
        """A refusal the model reads, on record (audit, then ``tool.denied``) first."""
        decision: Decision = ctx.decision
        await self.service.record(events.tool_denied(tool, ctx, args, decision, message))
        return ToolResult.error(message, meta={"lockgate/decision": _decision_meta(decision)})

    async def _ask_caller(self, call: PendingCall, tool: ToolDef, ctx: CallContext) -> PendingCall:
        if ctx.elicit is not None:
            answer = await ask_caller(ctx.elicit, call, tool)
            if answer is None:
                return call
            try:
                # Shielded: once the user answered, the decision is taken even if the hold ends.
                with anyio.CancelScope(shield=True):
                    return await self.service.decide(
                        call.id,
                        answer.decision,
                        by=ctx.principal,
                        channel="elicitation",
                        message=answer.message,
                        args=answer.args,
                        as_caller=True,
                    )
            except (DecisionRefused, PendingConflict):
                return call  # the caller's answer did not stand: an approver decides instead
        if ctx.client.era == "modern" and ctx.client.elicitation:
            raise InputRequired(call, tool)
        return call


def _decision_meta(decision: Decision) -> dict[str, Any]:
    return {
        "effect": decision.effect,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "policy_version": decision.policy_version,
    }
