"""`HeldTasks`: a held call answered as a task (`approval.as_task`).

A client that asked for a task (``params.task`` in 2025-11-25, the Tasks extension declared in
2026-07-28) and calls a tool the policy asks about (``ask``) or defers (``defer``) is answered
at once: the approval gate opens the pending call and returns (`HeldTask` on the call's
`TaskAsk`), and the face answers with a gateway-owned task, ``input_required`` for an approval,
``working`` for a deferred call, whose status message names the approval and who may decide.

The replica that answered settles the task: it waits on the pending store (a decision made on
any replica, through any channel, reaches it) and then

- approved: re-issues the same call, asking for a task of its own; the approval gate claims
  the approved call (exactly once across replicas: the store's compare-and-set) and runs it.
  A tool that supports tasks (``execution.taskSupport`` ``optional`` or ``required``, or any
  tool of a 2026-07-28 server) runs as an upstream task, as a direct task-augmented call of the
  same client would (a ``required`` tool refuses any other call): the held task follows it
  from then on (`TaskService.adopt`: its status, its result through the result steps with the
  call's one ``tool.result``, a cancel passed to the server), and when it ends its outcome
  replaces, once, the stand-in result the approved call left on its approval record
  (``done`` with the task's result; ``failed`` when it failed or was cancelled). Any other tool
  answers at once: its result is the task's (``completed``, or ``failed`` when the tool
  answered an error);
- denied, expired: ``failed``, the result being the refusal the caller would have read;
- a worker's answer (``defer``): its result, as for a tool;
- cancelled (``tasks/cancel`` withdraws the pending call, `HeldTasks.withdraw`): ``cancelled``.

The pending call is durable, so the task is too: when the replica settling it stops before the
decision, another replica (or the restarted gateway) claims the task's lease
(`gateway.tasks.leases`) and settles it (`HeldTasks.resume`), re-issuing the approved call as
its caller from the pending call's record: the store's compare-and-set still runs it once.
A replica that stopped after the approved call made its upstream task, before following it,
left that task named on the approval record's stand-in result: the next one follows it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, Protocol

import mcp_types as types

from gateway.approvals.errors import PendingConflict, PendingNotFound
from gateway.approvals.holding import approval_refusal
from gateway.approvals.pending import PendingCall, State
from gateway.approvals.service import ApprovalService
from gateway.approvals.wire import result_from_wire, upstream_task_of
from gateway.tasks.record import TaskRecord, new_task_id
from gateway.tasks.service import TaskService
from toolsets import trace_context
from toolsets.context import CallContext, Principal
from toolsets.refusal import refusal_result
from toolsets.result import ToolResult
from toolsets.upstream.convert import tool_result_to_mcp
from toolsets.upstream.tasks import HeldTask, Reissue, TaskAsk, UpstreamTask

__all__ = ["Calls", "HeldTasks", "held_message"]

log = logging.getLogger("lockgate.tasks")
_UNDECIDED: Final[frozenset[State]] = frozenset({"pending", "executing"})
_WAIT: Final = 3600.0
"""Seconds per wait on the pending store (the wait ends at the call's expiry anyway)."""


class Calls(Protocol):
    """The top of the call chain (`gateway.runtime.CallEntry`), where a resumed task's approved
    call is re-issued."""

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult: ...


def held_message(held: HeldTask) -> str:
    """The task's status message: the approval and who may decide it."""
    if held.kind == "external":
        return (
            f"Deferred to an external worker (call {held.approval_id}); "
            "the worker's answer is this task's result."
        )
    who = ", ".join(held.approvers) if held.approvers else "any approver"
    return (
        f"Waiting for approval {held.approval_id}; who may decide: {who} "
        f"(the approvals page, `lockgate approvals approve {held.approval_id}`, or the REST API)."
    )


class HeldTasks:
    """Held calls answered as tasks, settled from their pending calls.

    Args:
        tasks: The gateway's tasks (records, events, the task group that runs the settling).
        approvals: The pending calls.
        calls: Where a resumed task re-issues its approved call; with it, this settles the
            tasks whose replica stopped (the gateway's own instance; the faces' have none).
    """

    def __init__(
        self, tasks: TaskService, approvals: ApprovalService, calls: Calls | None = None
    ) -> None:
        self._tasks = tasks
        self._approvals = approvals
        self._calls = calls
        tasks.on_withdraw(self.withdraw)
        if calls is not None:  # one per service: the approval records of its tasks
            tasks.on_resume(self.resume)
            tasks.on_status(self._recorded)

    async def start(
        self, ask: TaskAsk, *, tool: str, principal: Principal, session_id: str | None
    ) -> TaskRecord:
        """The task answering the held call ``ask.held``, settled from now on here."""
        held = ask.held
        assert held is not None
        now = time.time()
        record = TaskRecord(
            id=new_task_id(),
            upstream=None,
            upstream_task_id=None,
            principal=principal.id,
            tenant=principal.tenant,
            session_id=session_id,
            tool=tool,
            status="working" if held.kind == "external" else "input_required",
            status_message=held_message(held),
            created_at=now,
            updated_at=now,
            ttl_ms=ask.ttl_ms,
            approval_id=held.approval_id,
        )
        settle = functools.partial(self._settle, reissue=ask.reissue)
        return await self._tasks.owned(record, settle)

    async def withdraw(self, record: TaskRecord) -> bool:
        """Cancel the pending call of ``record`` (its task was cancelled); False when it was
        decided already (the task then runs on to its outcome)."""
        assert record.approval_id is not None
        try:
            await self._approvals.outcomes.cancel(
                record.approval_id, by=record.principal, channel="task"
            )
        except PendingNotFound:
            return True
        except PendingConflict:
            call = await self._approvals.get(record.approval_id)
            return call.state == "cancelled"
        return True

    async def resume(self, record: TaskRecord) -> None:
        """Settle ``record``, whose replica stopped before it ended: the approved call is
        re-issued as its caller, as the pending call recorded them."""
        assert self._calls is not None
        assert record.approval_id is not None
        call = await self._approvals.get(record.approval_id)
        roles = frozenset(call.principal_roles)
        principal = Principal(id=call.principal, roles=roles, tenant=call.tenant)
        ctx = CallContext(principal=principal, session_id=call.session_id)
        calls = self._calls

        async def reissue(*, task: TaskAsk) -> Any:
            return await calls.call_tool(call.tool, call.args, dataclasses.replace(ctx, task=task))

        await self._settle(record, reissue=reissue)

    async def _settle(self, record: TaskRecord, *, reissue: Reissue | None) -> None:
        assert record.approval_id is not None
        call = await self._decided(record.approval_id)
        current = await self._tasks.store.get(record.id) or record
        if current.terminal:  # cancelled through the task meanwhile
            return
        held = {"traceparent": call.traceparent} if call.traceparent else {}
        with trace_context.carried(held):  # the task's events name the trace that held it
            await self._end(call, current, reissue)

    async def _end(self, call: PendingCall, current: TaskRecord, reissue: Reissue | None) -> None:
        """Move the task of ``call`` (``current``) on to its outcome."""
        if call.state == "approved" and reissue is not None:
            by = call.decided_by or "an approver"
            current = current.moved("working", f"Approval {call.id} approved by {by}; running.")
            await self._tasks.update(current)
            ask = TaskAsk(current.ttl_ms)
            outcome = await _run(functools.partial(reissue, task=ask), call.id)
            if ask.created is not None:  # an upstream task runs it: followed from now on
                await self._tasks.adopt(current, ask)
            else:
                await self._tasks.update(_ended(current, outcome))
        elif (ran := _ran_as_task(call)) is not None:  # its replica stopped before adopting
            await self._tasks.adopt(current, ran)
        elif call.state == "cancelled":
            message = f"Call {call.id} was cancelled; not executed."
            await self._tasks.update(current.moved("cancelled", message))
        else:
            await self._tasks.update(_ended(current, await self._outcome(call)))

    async def _recorded(self, record: TaskRecord) -> None:
        """Put the outcome of an ended held task that ran as an upstream task on its approval
        record, in place of the stand-in result the approved call left there (once)."""
        if not record.terminal or record.approval_id is None or record.upstream is None:
            return
        to: Literal["done", "failed"] = "done"
        result, why = record.result, None
        if record.status != "completed":
            to, why = "failed", record.status_message or f"The upstream task {record.status}."
            if record.status == "cancelled":
                why = f"The upstream task was cancelled: {why}"
            result = result if result is not None else ToolResult.error(why).wire
        try:
            await self._approvals.store.task_ended(
                record.approval_id, to=to, result=result, error=why
            )
        except PendingNotFound:
            log.warning("task %s: approval %s is gone", record.id[:12], record.approval_id)

    async def _decided(self, id: str) -> PendingCall:
        store = self._approvals.store
        call = await store.wait(id, _WAIT, while_in=_UNDECIDED)
        while call.state in _UNDECIDED:
            call = await store.wait(id, _WAIT, while_in=_UNDECIDED)
        return call

    async def _outcome(self, call: PendingCall) -> ToolResult:
        """What the caller would have read for ``call``, which ended without running here."""
        meta = {"lockgate/pending": {"id": call.id, "state": call.state}}
        if call.state in {"denied", "done", "failed"} and not call.delivered:
            with contextlib.suppress(PendingConflict):
                await self._approvals.store.deliver(call.id)
        if call.state == "denied":
            text = call.message or "The call was denied."
            refusal = approval_refusal(call, "approval_denied", text, "none")
        elif call.state in {"done", "failed"} and call.result is not None:
            return result_from_wire(call.result).with_meta(meta)
        elif call.state == "expired":
            text = f"Approval {call.id} expired without a decision; not executed."
            refusal = approval_refusal(call, "approval_expired", text, "reissue")
        else:
            return ToolResult.error(f"Call {call.id} failed: {call.error}", meta=meta)
        return refusal_result(refusal, meta=meta)


def _ran_as_task(call: PendingCall) -> TaskAsk | None:
    """The upstream task the approved ``call`` ran as (its result stands in for it), as the
    ask that made it, for a task whose replica stopped before following it."""
    task = upstream_task_of(call.result) if call.state == "done" else None
    if task is None:
        return None
    ask = TaskAsk()
    ask.created = UpstreamTask(task_id=str(task["taskId"]), status="working")
    ask.server, ask.upstream_tool = str(task["server"]), call.upstream_tool
    ask.pin, ask.call_id, ask.args = call.tool_pin, call.call_id, call.effective_args
    return ask


async def _run(reissue: Callable[[], Awaitable[Any]], id: str) -> Any:
    """The approved call's outcome; an error raised on the way is the task's failure."""
    try:
        return await reissue()
    except Exception as exc:
        log.warning("approved call %s of a task could not run: %r", id, exc)
        return ToolResult.error(f"The approved call {id} could not run: {exc}")


def _ended(record: TaskRecord, outcome: Any) -> TaskRecord:
    """``record`` ended with ``outcome`` (a tool result, a JSON-RPC error, or an input request
    a task cannot carry)."""
    if isinstance(outcome, types.ErrorData):
        error = outcome.model_dump(mode="json", exclude_none=True)
        return record.moved("failed", outcome.message, error=error)
    if not isinstance(outcome, ToolResult):
        message = "The approved call asked the client for input, which a task cannot carry."
        return record.moved("failed", message)
    wire = tool_result_to_mcp(outcome).model_dump(mode="json", by_alias=True, exclude_none=True)
    if outcome.is_error:
        return record.moved("failed", _text(outcome), result=wire)
    return record.moved("completed", None, result=wire)


def _text(result: ToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return " ".join(texts) or "The tool answered an error."
