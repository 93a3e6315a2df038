"""`Decisions`: an approver's (or the caller's) decision applied to a pending approval: checked,
put on record, then made in the store by a compare-and-set. Staged votes and break-glass are
applied by `gateway.approvals.voting`."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import anyio

from gateway.approvals import voting
from gateway.approvals.asked import Asked, check_asked
from gateway.approvals.editing import EditCheck
from gateway.approvals.errors import DecisionRefused, PendingConflict
from gateway.approvals.granting import Grants
from gateway.approvals.grants import Grant
from gateway.approvals.known_tools import KnownTools
from gateway.approvals.outcomes import Outcomes
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import ApprovalRecorder, outcome_of
from gateway.approvals.store import PendingStore, pending_call
from toolsets.context import Principal

__all__ = ["Decisions"]

log = logging.getLogger("lockgate.approvals")


class Decisions:
    """Applies decisions, one at a time per call in this process.

    Args:
        store: The pending calls.
        grants: Makes the grant a decision asks for.
        tools: Where a call's tool is looked up now (a changed tool is not approved).
        outcomes: Puts each outcome on record.
        record: Puts an event on record, then publishes it (votes, break-glass).
        edits: Checks the arguments of an ``edit``.
    """

    def __init__(
        self,
        store: PendingStore,
        *,
        grants: Grants,
        tools: KnownTools,
        outcomes: Outcomes,
        record: ApprovalRecorder,
        edits: EditCheck,
    ) -> None:
        self.store = store
        self.grants = grants
        self.tools = tools
        self.outcomes = outcomes
        self.record = record
        self._edits = edits
        self._deciding: dict[str, anyio.Lock] = {}

    async def apply(self, id: str, asked: Asked) -> PendingCall:
        """Apply ``asked`` to the pending call ``id`` (see `ApprovalService.decide`)."""
        lock = self._deciding.setdefault(id, anyio.Lock())
        try:
            async with lock:  # one decision of this call at a time in this process
                return await self._decide(id, asked)
        finally:
            if not lock.statistics().tasks_waiting:
                self._deciding.pop(id, None)

    async def _decide(self, id: str, asked: Asked) -> PendingCall:
        call = await pending_call(self.store, id)
        check_asked(call, asked)
        made = None if asked.grant is None else self.grants.issue(call, asked.grant, by=asked.by)
        if asked.decision in {"approve", "edit"}:
            await self._check_tool(call, asked.by, asked.channel)
        if asked.break_glass:
            return await voting.break_glass(self, call, asked)
        if call.stages and asked.decision == "approve":
            return await voting.vote(self, call, asked, made)
        return await self._decided(call, asked, made)

    async def _decided(self, call: PendingCall, asked: Asked, made: Grant | None) -> PendingCall:
        """Apply a decision that settles ``call`` at once (every decision of a classic call;
        deny and respond of a staged one)."""
        decision = asked.decision
        edited = await self._edits(call, asked.args) if decision == "edit" else None
        typed = decision == "respond" and await self._has_output_schema(call.tool)
        to, update = outcome_of(decision, asked.message, edited, typed=typed)
        update |= {"decided_by": asked.by.id, "decision": decision, "channel": asked.channel}
        if made is not None:
            update["grant_id"] = made.id
        # On record first: if the audit log cannot be written, the decision fails (raises
        # AuditUnavailable), the call stays pending and nothing runs.
        await self.outcomes.announce(replace(call, state=to, **update))
        if made is not None:
            await self.grants.announce(made)
        try:
            decided = await self.store.transition(call.id, expect={"pending"}, to=to, **update)
        except PendingConflict:
            log.warning("%s changed state while its decision was recorded; not applied", call.id)
            raise
        log.info("%s: %s by %s via %s", call.id, decision, asked.by.id, asked.channel)
        if made is not None:
            await self.grants.keep(made)
        return decided

    async def _check_tool(self, call: PendingCall, by: Principal, channel: str) -> None:
        """Refuse approving a call whose tool is gone for now (it stays pending) or changed
        since it was held: accepted since, or in quarantine (it ends ``failed``, not run)."""
        tool = await self.tools.current(call.tool)
        if tool is None and self.tools.quarantined(call.tool):
            reason = (
                f"tool {call.tool!r} changed upstream since this call was held; it was not run:"
                " the new definition waits for review by an approver"
                f" (`lockgate pins diff {call.tool}`)"
            )
        elif tool is None:
            raise DecisionRefused(
                f"tool {call.tool!r} is not available now: its server {call.server!r} may be "
                "down or starting, or, if reached with each caller's own credentials, have had "
                "no caller since the gateway started (its tools show once one calls or lists); "
                "the call stays pending: decide again once it is back"
            )
        elif tool.pin == call.tool_pin:
            return
        else:
            reason = f"tool {call.tool!r} changed since this call was held; it was not run"
        update: dict[str, Any] = {"decided_by": by.id, "decision": "error", "channel": channel}
        update |= {"error": reason, "message": reason}
        await self.outcomes.announce(replace(call, state="failed", **update))
        await self.store.transition(call.id, expect={"pending"}, to="failed", **update)
        raise DecisionRefused(reason)

    async def _has_output_schema(self, name: str) -> bool:
        tool = await self.tools.current(name)
        return tool is not None and tool.output_schema is not None
