"""`HeldCalls`: the chain's approval gate. A held call waits here for its outcome; an approved
one is claimed (exactly once) and handed back to the chain to run."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import anyio

from gateway.approvals.caller import ask_calling_user, needs_back_channel
from gateway.approvals.errors import (
    BackChannelRequired,
    PendingConflict,
    PendingNotFound,
    TooManyPending,
)
from gateway.approvals.pending import PendingCall
from gateway.approvals.service import ApprovalService
from gateway.approvals.wire import UPSTREAM_TASK, result_from_wire, result_to_wire
from toolsets.approval_required import Approved, Granted
from toolsets.context import CallContext
from toolsets.policy import Refuser
from toolsets.refusal import (
    Refusal,
    RefusalKind,
    Unblock,
    UnblockAction,
    refusal_result,
)
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.tasks import HeldTask, TaskAsk

__all__ = ["HeldCalls", "HeldObserver", "Holding", "pending_result"]

_WAITING = frozenset({"pending", "executing"})


def pending_result(call: PendingCall) -> ToolResult:
    """The non-executing answer to a call still waiting for a decision or a worker."""
    waiting = "an approver's decision" if call.kind == "approval" else "an external worker"
    text = (
        f"Not executed yet: this call is waiting for {waiting} (approval id {call.id}). "
        "Re-issue the same call with the same arguments later to get its outcome."
    )
    meta = {"lockgate/pending": {"id": call.id, "kind": call.kind, "state": call.state}}
    return ToolResult.error(text, meta=meta)


class Holding:
    """The pending calls whose caller this gateway holds open right now (its request has not
    been answered yet); the API shows it as ``waiting``. Per process: another replica's
    held callers are not seen here."""

    def __init__(self) -> None:
        self._ids: Counter[str] = Counter()  # the same call re-issued may be held twice

    def __contains__(self, id: object) -> bool:
        return self._ids[id] > 0 if isinstance(id, str) else False

    @contextlib.contextmanager
    def holding(self, id: str) -> Iterator[None]:
        """Count the call ``id`` as held open while inside."""
        self._ids[id] += 1
        try:
            yield
        finally:
            self._ids[id] -= 1
            if self._ids[id] <= 0:
                del self._ids[id]


class HeldObserver(Protocol):
    """Told of the pending call a held call met (opened, re-issued, claimed): the gateway's
    tracing names it on the call's span (`gateway.telemetry.holds.HeldMarks`)."""

    def __call__(self, call: PendingCall) -> None: ...


class HeldCalls:
    """Implements `toolsets.approval_required.ApprovalGate` on the approval service.

    Args:
        service: Creates and decides pending calls.
        refuse: Answers a call refused here (too many waiting), on record.
        progress_interval: Seconds between progress notifications while a call is held, for
            clients that asked for progress.
        holding: Where the calls held open right now are counted (default: a new registry).
        observe: Told of the pending call each held call met, when tracing.
    """

    def __init__(
        self,
        service: ApprovalService,
        refuse: Refuser,
        *,
        progress_interval: float = 5.0,
        holding: Holding | None = None,
        observe: HeldObserver | None = None,
    ) -> None:
        self.service = service
        self.refuse = refuse
        self.progress_interval = progress_interval
        self.holding = Holding() if holding is None else holding
        self.observe = observe
        self._asks: dict[str, TaskAsk] = {}  # claimed calls that asked for a task, by id

    async def hold(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult | Approved | Granted:
        decision = ctx.decision
        assert decision is not None  # the policy step decided before the approval step
        found = await self.service.openings.reusable(tool, args, ctx)
        if found is None or found.state == "pending":  # a decided re-issue is answered by it
            grant = await self.service.grants.covering(tool, ctx, decision)
            if grant is not None:
                return Granted(grant_id=grant.id)
        if needs_back_channel(decision, ctx):
            raise BackChannelRequired(tool.name)
        try:
            call = found or await self.service.openings.open(tool, args, ctx, decision)
        except TooManyPending as exc:
            wait = Unblock(action="wait_for_pending")
            refusal = Refusal(kind="too_many_pending", message=str(exc), unblock=wait)
            return await self.refuse(tool, args, ctx, refusal)
        if self.observe is not None:
            self.observe(call)
        if call.state == "pending" and _as_task(ctx, call):  # answered now; the task follows
            assert ctx.task is not None
            ctx.task.held = HeldTask(approval_id=call.id, kind=call.kind, approvers=call.approvers)
            return pending_result(call)
        with self.holding.holding(call.id):
            return await self._hold(call, tool, ctx, ctx.hold_for(decision.approval.hold))

    async def _hold(
        self, call: PendingCall, tool: ToolDef, ctx: CallContext, hold: float
    ) -> ToolResult | Approved:
        deadline = anyio.current_time() + hold
        if call.state == "pending" and call.kind == "approval" and "caller" in call.approvers:
            # The hold bounds the wait for the caller's answer too.
            with anyio.move_on_after(hold):
                call = await ask_calling_user(self.service, call, tool, ctx)
            hold = max(deadline - anyio.current_time(), 0.0)
        return await self._settle(call, tool, ctx, hold)

    async def finished(self, approved: Approved, result: ToolResult) -> None:
        ask = self._asks.pop(approved.id, None)
        if ask is not None and ask.created is not None:  # it runs on as the upstream's task
            task = {"server": ask.server, "taskId": ask.created.task_id}
            result = result.with_meta({**(result.meta or {}), UPSTREAM_TASK: task})
        await self.service.store.transition(
            approved.id,
            expect={"executing"},
            to="failed" if result.is_error else "done",
            result=result_to_wire(result),
            delivered=True,
        )

    async def failed(self, approved: Approved, error: BaseException) -> None:
        self._asks.pop(approved.id, None)
        await self.service.store.transition(
            approved.id, expect={"executing"}, to="failed", error=repr(error), delivered=True
        )

    async def _settle(
        self, call: PendingCall, tool: ToolDef, ctx: CallContext, hold: float
    ) -> ToolResult | Approved:
        if call.state in _WAITING:
            call = await self._wait(call, ctx, hold)
        if call.state == "approved":
            return await self._claim(call, tool, ctx, hold)
        if call.state in _WAITING:
            return pending_result(call)
        return await self._outcome(call, tool)

    async def _wait(self, call: PendingCall, ctx: CallContext, hold: float) -> PendingCall:
        store, deadline, step = self.service.store, anyio.current_time() + hold, 0
        try:
            with self.service.closing.released_on_close():  # a stopping gateway answers now
                while (remaining := deadline - anyio.current_time()) > 0:
                    wait = min(remaining, self.progress_interval) if ctx.progress else remaining
                    call = await store.wait(call.id, wait, while_in={call.state})
                    if call.state not in _WAITING:
                        return call
                    if ctx.progress is not None:
                        step += 1
                        await ctx.progress(step, None, f"awaiting approval {call.id}")
        except anyio.get_cancelled_exc_class():
            if call.state == "pending" and not self.service.closing:
                with (
                    anyio.CancelScope(shield=True),
                    contextlib.suppress(PendingConflict, PendingNotFound),
                ):
                    await self.service.outcomes.cancel(call.id, by=call.principal, channel="client")
            raise
        return call

    async def _claim(
        self, call: PendingCall, tool: ToolDef, ctx: CallContext, hold: float
    ) -> ToolResult | Approved:
        current = await self.service.tools.current(call.tool)  # it may have changed while held
        if current is None or current.pin != call.tool_pin:
            reason = f"tool {call.tool!r} changed or disappeared after approval; not executed"
            failed = await self.service.store.transition(
                call.id, expect={"approved"}, to="failed", error=reason, delivered=True
            )
            refusal = approval_refusal(failed, "tool_changed", reason, "reissue")
            return refusal_result(refusal, tool=tool, meta={"lockgate/pending": {"id": failed.id}})
        try:
            claimed = await self.service.store.transition(
                call.id, expect={"approved"}, to="executing"
            )
        except PendingConflict:  # another identical call claimed it first
            return await self._settle(await self.service.get(call.id), tool, ctx, hold)
        if self.observe is not None:
            self.observe(claimed)
        if ctx.task is not None:  # an upstream task may run it (`finished` marks its result)
            self._asks[claimed.id] = ctx.task
        return Approved(id=claimed.id, args=claimed.effective_args, call_id=claimed.call_id)

    async def _outcome(self, call: PendingCall, tool: ToolDef) -> ToolResult:
        meta = {"lockgate/pending": {"id": call.id, "state": call.state}}
        if call.state in {"denied", "done", "failed"} and not call.delivered:
            with contextlib.suppress(PendingConflict):
                await self.service.store.deliver(call.id)
        if call.state == "denied":
            text = call.message or "The call was denied."
            refusal = approval_refusal(call, "approval_denied", text, "none")
        elif call.state in {"done", "failed"} and call.result is not None:
            return result_from_wire(call.result).with_meta(meta)
        elif call.state == "expired":
            text = f"Approval {call.id} expired without a decision; not executed."
            refusal = approval_refusal(call, "approval_expired", text, "reissue")
        elif call.state == "cancelled":
            text = f"Call {call.id} was cancelled; not executed."
            refusal = approval_refusal(call, "approval_cancelled", text, "reissue")
        else:
            return ToolResult.error(f"Call {call.id} failed: {call.error}", meta=meta)
        return refusal_result(refusal, tool=tool, meta=meta)


def _as_task(ctx: CallContext, call: PendingCall) -> bool:
    """Whether this held call is answered at once as a task (`approval.as_task`): the client
    asked for one, the rule does not say ``never``, and (``auto``) the caller does not decide."""
    mode = ctx.decision.approval.as_task if ctx.decision is not None else "never"
    if ctx.task is None or mode == "never":
        return False
    return mode == "always" or "caller" not in call.approvers


def approval_refusal(
    call: PendingCall, kind: RefusalKind, message: str, action: UnblockAction
) -> Refusal:
    """The refusal of a held call its approval ended without running (``action``: what would
    unblock it: ``reissue`` asks again, ``none`` for a person's denial)."""
    unblock = Unblock(action=action)
    return Refusal(kind=kind, message=message, rule=call.rule_id, approval=call.id, unblock=unblock)
