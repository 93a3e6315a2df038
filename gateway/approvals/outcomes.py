"""`Outcomes`: how a pending call ends other than by an approver's decision (a worker's answer to
an external call, the client's cancellation), and every outcome put on record
(``tool.approval.resolved``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.approvals.errors import DecisionRefused
from gateway.approvals.known_tools import KnownTools
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import ApprovalRecorder, origin_of, value_result
from gateway.approvals.store import PendingStore, pending_call
from gateway.approvals.wire import result_to_wire
from gateway.events import tool_events as events
from toolsets.context import Principal
from toolsets.result import ToolResult

__all__ = ["OutcomeWatcher", "Outcomes"]

OutcomeWatcher = Callable[[PendingCall, float], None]
"""Told of each outcome put on record, with the store's time (metrics)."""


class Outcomes:
    """Settles pending calls from outside and announces outcomes.

    Args:
        store: The pending calls.
        record: Puts an event on record, then publishes it.
        tools: Names the tool of each outcome's event.
    """

    def __init__(self, store: PendingStore, record: ApprovalRecorder, tools: KnownTools) -> None:
        self._store = store
        self._record = record
        self._tools = tools
        self._watchers: list[OutcomeWatcher] = []

    def watch(self, watcher: OutcomeWatcher) -> Callable[[], None]:
        """Tell ``watcher`` of every outcome from now on; returns an undo function."""
        self._watchers.append(watcher)
        return lambda: self._watchers.remove(watcher)

    async def announce(self, call: PendingCall) -> None:
        """Put a call's outcome (decision, expiry, cancellation, result) on record."""
        await self._record(
            events.approval_resolved(
                await self._tools.of(call),
                origin_of(call),
                approval_id=call.id,
                decision=call.decision or call.state,
                decided_by=call.decided_by or "",
                channel=call.channel or "",
                message=call.message,
                grant=call.grant_id,
            )
        )
        for watcher in self._watchers:
            watcher(call, self._store.now())

    async def post_result(
        self,
        id: str,
        *,
        by: Principal,
        value: Any = None,
        error: str | None = None,
        retry_after: float | None = None,
    ) -> PendingCall:
        """A worker's answer to an external (deferred) call."""
        call = await pending_call(self._store, id)
        if call.kind != "external":
            raise DecisionRefused(f"{id} is an approval, not an external call")
        failed = error is not None
        result = ToolResult.error(error) if error is not None else value_result(value)
        done = await self._store.transition(
            id,
            expect={"pending"},
            to="failed" if failed else "done",
            result=result_to_wire(result),
            decided_by=by.id,
            decision="error" if failed else "result",
            channel="worker",
            error=error,
            retry_after=retry_after if failed else None,
        )
        await self.announce(done)
        return done

    async def cancel(self, id: str, *, by: str, channel: str) -> PendingCall:
        """Withdraw a pending call (the client cancelled)."""
        call = await self._store.transition(
            id,
            expect={"pending"},
            to="cancelled",
            decided_by=by,
            decision="cancel",
            channel=channel,
        )
        await self.announce(call)
        return call
