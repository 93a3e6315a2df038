"""`ApprovalService`: holding, deciding and settling pending calls, for every channel."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

import anyio

from gateway.approvals import voting
from gateway.approvals.asked import Asked, check_asked
from gateway.approvals.errors import (
    DecisionRefused,
    PendingConflict,
    PendingNotFound,
    TooManyPending,
)
from gateway.approvals.grant_store import GrantStore
from gateway.approvals.granting import Grants
from gateway.approvals.grants import Grant, GrantRequest
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import held_call, origin_of, outcome_of, requested, value_result
from gateway.approvals.store import PendingStore
from gateway.approvals.wire import result_to_wire
from gateway.events import tool_events as events
from gateway.events.model import Event
from policies import Decision, PolicyHolder
from policies.session import SessionState
from toolsets.canonical import sha256_hex
from toolsets.context import CallContext, Principal
from toolsets.errors import ApprovalConflict, ArgumentsInvalid, AuditUnavailable
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.validated import SchemaValidators

__all__ = ["ApprovalService", "Recorder"]

log = logging.getLogger("lockgate.approvals")
NOT_ON_RECORD = "the request could not be put on record (audit log unwritable); not asked, not run"
Catalogue = Callable[[], Awaitable[dict[str, ToolDef]]]


class Recorder(Protocol):
    """Puts an event on record (audit log, durably) and then publishes it.

    Raises when the record cannot be written: the caller fails closed.
    """

    async def __call__(self, event: Event) -> None: ...


class SessionLoader(Protocol):
    """Loads a session's state (the gateway's `SessionBook`): an edit is re-decided in it."""

    async def ensure(self, ctx: CallContext) -> SessionState: ...


class ApprovalService:
    """The one place where pending calls are created, decided, executed and delivered; its
    ``grants`` are the standing approvals some decisions make (kept in ``grant_store``)."""

    def __init__(
        self,
        store: PendingStore,
        policy: PolicyHolder,
        *,
        catalogue: Catalogue,
        record: Recorder,
        validators: SchemaValidators,
        sessions: SessionLoader | None = None,
        max_pending: int = 20,
        grant_store: GrantStore,
    ) -> None:
        self.store = store
        self.grants = Grants(grant_store, store, record, clock=store.now)
        self._sessions = sessions
        self.policy = policy
        self._catalogue = catalogue
        self.record = record
        self._validators = validators
        self.max_pending = max_pending
        self.closing = False
        self._deciding: dict[str, anyio.Lock] = {}
        self._reviewed: dict[str, ToolDef] = {}

    def register_reviewed(self, tool: ToolDef) -> None:
        """Know ``tool``, a host's own function reviewed through the gateway (the
        ``human_in_the_loop`` decorators), so that edits of its calls are validated; its name
        is not a valid exposed tool name, so no gateway call can match its records."""
        self._reviewed[tool.name] = tool

    # -- creating ------------------------------------------------------------------------------

    async def request(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
    ) -> PendingCall:
        """The pending call answering this call: a re-issued identical one, or a new one."""
        found = await self.reusable(tool, args, ctx)
        return found if found is not None else await self.open(tool, args, ctx, decision)

    async def reusable(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> PendingCall | None:
        """The earlier identical call this one re-issues (see `PendingStore.find_reusable`)."""
        return await self.store.find_reusable(ctx.principal.id, tool.name, sha256_hex(args))

    async def open(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
    ) -> PendingCall:
        """A new pending call for this call, durable and on record before anyone is told.

        Raises:
            TooManyPending: the caller has ``max_pending`` calls waiting already.
        """
        waiting = await self.store.list(
            state="pending", principal=ctx.principal.id, limit=self.max_pending
        )
        if len(waiting) >= self.max_pending:
            raise TooManyPending(
                f"{len(waiting)} of your calls are already waiting for a decision; "
                "wait for those before making more calls that need approval."
            )
        call = await self.store.create(held_call(tool, args, ctx, decision))  # durable first
        await self._announce(call, requested(call, tool, ctx, args, decision))
        return call

    async def _announce(self, call: PendingCall, event: Event) -> None:
        """Put a new held call on record; one that cannot be ends ``failed``, unasked."""
        try:
            await self.record(event)
        except AuditUnavailable:  # never asked for, so it must not wait for anyone
            with contextlib.suppress(ApprovalConflict):
                await self.store.transition(
                    call.id, expect={"pending"}, to="failed", error=NOT_ON_RECORD, delivered=True
                )
            raise
        deciders = ", ".join(call.approvers) or "any approver"
        log.info(
            "held %s: %s for %s (rule %s), waiting for %s",
            call.id,
            call.tool,
            call.principal,
            call.rule_id or "default",
            deciders,
        )

    # -- deciding ------------------------------------------------------------------------------

    async def decide(
        self,
        id: str,
        decision: str,
        *,
        by: Principal,
        channel: str,
        message: str | None = None,
        args: Mapping[str, Any] | None = None,
        as_caller: bool = False,
        grant: GrantRequest | None = None,
        break_glass: bool = False,
        reason: str | None = None,
    ) -> PendingCall:
        """Apply an approver's (or the caller's) decision to a pending approval.

        In a staged call, ``approve`` records ``by``'s vote in the current stage; the call is
        approved by the vote completing the last stage. ``grant`` makes a standing grant with
        the approval; ``break_glass`` (with a ``reason``) approves at once.

        Raises:
            PendingNotFound: no such call.
            DecisionRefused: not allowed for ``by``, not offered by the rule, an edit the schema
                or the policy refuses, or an approval of a call whose tool changed since it was
                held (the call then ends ``failed``, not run).
            DecisionInvalid: a grant the rule does not offer or longer than its ``grant_max``,
                or break-glass without a reason.
            PendingConflict: already decided (or expired, cancelled), or ``by`` voted already.
            AuditUnavailable: the decision could not be put on record; the call stays pending.
        """
        asked = Asked(
            decision=decision,
            by=by,
            channel=channel,
            message=message,
            args=args,
            as_caller=as_caller,
            grant=grant,
            break_glass=break_glass,
            reason=reason,
        )
        lock = self._deciding.setdefault(id, anyio.Lock())
        try:
            async with lock:  # one decision of this call at a time in this process
                return await self._decide(id, asked)
        finally:
            if not lock.statistics().tasks_waiting:
                self._deciding.pop(id, None)

    async def _decide(self, id: str, asked: Asked) -> PendingCall:
        call = await self._get(id)
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
        edited = await self._checked_edit(call, asked.args) if decision == "edit" else None
        typed = decision == "respond" and await self._has_output_schema(call.tool)
        to, update = outcome_of(decision, asked.message, edited, typed=typed)
        update |= {"decided_by": asked.by.id, "decision": decision, "channel": asked.channel}
        if made is not None:
            update["grant_id"] = made.id
        # On record first: if the audit log cannot be written, the decision fails (raises
        # AuditUnavailable), the call stays pending and nothing runs.
        await self._resolved(replace(call, state=to, **update))
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
        since it was held (it ends ``failed``, not run)."""
        tool = await self.current_tool(call.tool)
        if tool is None:
            raise DecisionRefused(
                f"tool {call.tool!r} is not available now (its server may be down or starting); "
                "the call stays pending: decide again once it is back"
            )
        if tool.pin == call.tool_pin:
            return
        reason = f"tool {call.tool!r} changed since this call was held; it was not run"
        update: dict[str, Any] = {"decided_by": by.id, "decision": "error", "channel": channel}
        update |= {"error": reason, "message": reason}
        await self._resolved(replace(call, state="failed", **update))
        await self.store.transition(call.id, expect={"pending"}, to="failed", **update)
        raise DecisionRefused(reason)

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
        call = await self._get(id)
        if call.kind != "external":
            raise DecisionRefused(f"{id} is an approval, not an external call")
        failed = error is not None
        result = ToolResult.error(error) if error is not None else value_result(value)
        done = await self.store.transition(
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
        await self._resolved(done)
        return done

    async def cancel(self, id: str, *, by: str, channel: str) -> PendingCall:
        """Withdraw a pending call (the client cancelled)."""
        call = await self.store.transition(
            id,
            expect={"pending"},
            to="cancelled",
            decided_by=by,
            decision="cancel",
            channel=channel,
        )
        await self._resolved(call)
        return call

    async def _has_output_schema(self, name: str) -> bool:
        tool = await self.current_tool(name)
        return tool is not None and tool.output_schema is not None

    async def _checked_edit(
        self, call: PendingCall, args: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        if args is None:
            raise DecisionRefused("an edit needs new arguments")
        tool = await self.current_tool(call.tool)
        if tool is None or tool.pin != call.tool_pin:
            raise DecisionRefused(
                f"tool {call.tool!r} changed or disappeared since the call was held"
            )
        try:
            self._validators.check(tool, args)
        except ArgumentsInvalid as exc:
            raise DecisionRefused(str(exc)) from None
        principal = Principal(
            id=call.principal, roles=frozenset(call.principal_roles), tenant=call.tenant
        )
        session = await self._sessions.ensure(origin_of(call)) if self._sessions else None
        again = self.policy.current.evaluate_call(tool, args, principal, session)
        if again.effect in {"deny", "hide"}:
            raise DecisionRefused(f"the policy refuses the edited arguments: {again.reason}")
        copied: dict[str, Any] = json.loads(json.dumps(dict(args)))
        return copied

    async def current_tool(self, name: str) -> ToolDef | None:
        """The tool ``name`` as the catalogue has it now (its pin may differ from a held call's)."""
        return (await self._catalogue()).get(name) or self._reviewed.get(name)

    async def get(self, id: str) -> PendingCall:
        """The pending call ``id``.

        Raises:
            PendingNotFound: no such call.
        """
        return await self._get(id)

    async def announce(self, call: PendingCall) -> None:
        """Put a call's outcome (decision, expiry, cancellation) on record."""
        await self._resolved(call)

    async def tool_of(self, call: PendingCall) -> ToolDef:
        """The tool of ``call`` for its events (as held, when the catalogue lacks it now)."""
        tool = await self.current_tool(call.tool)
        if tool is None:
            tool = ToolDef(name=call.tool, server=call.server, upstream_name=call.upstream_tool)
        return tool

    async def _resolved(self, call: PendingCall) -> None:
        await self.record(
            events.approval_resolved(
                await self.tool_of(call),
                origin_of(call),
                approval_id=call.id,
                decision=call.decision or call.state,
                decided_by=call.decided_by or "",
                channel=call.channel or "",
                message=call.message,
                grant=call.grant_id,
            )
        )

    async def _get(self, id: str) -> PendingCall:
        call = await self.store.get(id)
        if call is None:
            raise PendingNotFound(id)
        return call
