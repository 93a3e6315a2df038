"""`Openings`: the pending call that holds a call: an identical re-issued call finds its earlier
one; a new one is durable and on record before anyone is told, at most ``max_pending`` waiting
per caller."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol

from gateway.approvals.errors import TooManyPending
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import ApprovalRecorder, held_call, requested
from gateway.approvals.store import PendingStore
from gateway.events.model import Event
from policies import Decision
from toolsets.canonical import sha256_hex
from toolsets.context import CallContext
from toolsets.errors import ApprovalConflict, AuditUnavailable
from toolsets.tooldef import ToolDef

__all__ = ["NOT_ON_RECORD", "Notice", "Openings"]

log = logging.getLogger("lockgate.approvals")
NOT_ON_RECORD: Final = (
    "the request could not be put on record (audit log unwritable); not asked, not run"
)


class Notice(Protocol):
    """A new held call's context pack as its ``tool.approval.requested`` event carries it
    (`gateway.approvals.context_pack.notice`)."""

    async def __call__(self, call: PendingCall) -> dict[str, Any]: ...


class Openings:
    """Opens pending calls.

    Args:
        store: The pending calls.
        record: Puts an event on record, then publishes it.
        max_pending: How many calls of one principal may wait at once.
        notice: The context pack a new call's event carries (None: the tool and client only).
    """

    def __init__(
        self,
        store: PendingStore,
        record: ApprovalRecorder,
        *,
        max_pending: int,
        notice: Notice | None = None,
    ) -> None:
        self._store = store
        self._record = record
        self._notice = notice
        self.max_pending = max_pending

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
        return await self._store.find_reusable(ctx.principal.id, tool.name, sha256_hex(args))

    async def open(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
    ) -> PendingCall:
        """A new pending call for this call, durable and on record before anyone is told.

        Raises:
            TooManyPending: the caller has ``max_pending`` calls waiting already.
        """
        waiting = await self._store.list(
            state="pending", principal=ctx.principal.id, limit=self.max_pending
        )
        if len(waiting) >= self.max_pending:
            raise TooManyPending(
                f"{len(waiting)} of your calls are already waiting for a decision; "
                "wait for those before making more calls that need approval."
            )
        call = await self._store.create(held_call(tool, args, ctx, decision))  # durable first
        context = await self._context(call)
        await self._announce(call, requested(call, tool, ctx, args, decision, context=context))
        return call

    async def _context(self, call: PendingCall) -> dict[str, Any] | None:
        """The notice's context pack; None (the event then has the tool and client only) when
        it cannot be built: telling approvers less never stops the call being held."""
        if self._notice is None or call.kind != "approval":
            return None
        try:
            return await self._notice(call)
        except Exception as exc:  # the name only: a message could quote the arguments
            log.warning(
                "the context pack of %s was left out of its notice: %s", call.id, type(exc).__name__
            )
            return None

    async def _announce(self, call: PendingCall, event: Event) -> None:
        """Put a new held call on record; one that cannot be ends ``failed``, unasked."""
        try:
            await self._record(event)
        except AuditUnavailable:  # never asked for, so it must not wait for anyone
            with contextlib.suppress(ApprovalConflict):
                await self._store.transition(
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
