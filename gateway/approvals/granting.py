"""`Grants`: standing approvals as the approval service uses them. An approval may make one
(as far as its rule allows); a later call the policy would ``ask`` under the same rule runs
without asking while a live grant covers it; approvers list and revoke them. Each creation and
revocation is on record (audit log, then the event bus)."""

from __future__ import annotations

import builtins
import logging
import time
from collections.abc import Callable

from gateway.approvals.access import may_see
from gateway.approvals.errors import DecisionInvalid, GrantNotFound
from gateway.approvals.grant_store import GrantStore
from gateway.approvals.grants import Grant, GrantRequest, Match
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import ApprovalRecorder
from gateway.approvals.store import PendingStore
from gateway.events import tool_events as events
from policies.durations import format_duration
from toolsets.context import CallContext, Principal
from toolsets.decision import DEFAULT_GRANT_MAX, Decision
from toolsets.errors import AuditUnavailable
from toolsets.tooldef import ToolDef

__all__ = ["Grants"]

log = logging.getLogger("lockgate.approvals")


class Grants:
    """Makes, finds, lists and revokes grants.

    Args:
        store: Where grants live.
        calls: The pending calls (a grant is visible to whoever may see the call that made it).
        record: Puts an event on record, then publishes it.
        clock: Wall-clock source in unix seconds.
    """

    def __init__(
        self,
        store: GrantStore,
        calls: PendingStore,
        record: ApprovalRecorder,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._calls = calls
        self._record = record
        self._clock = clock

    async def covering(self, tool: ToolDef, ctx: CallContext, decision: Decision) -> Grant | None:
        """The live grant that lets this call run without asking, or None (the rule offers no
        grants, or none covers it; the store is not asked when the rule offers none)."""
        scopes = tuple(scope for scope in decision.approval.grants if scope != "once")
        if decision.effect != "ask" or not scopes:
            return None
        match = Match(
            tool=tool.name,
            server=tool.server,
            rule_id=decision.rule_id,
            principal=ctx.principal.id,
            session_id=ctx.session_id,
            tenant=ctx.principal.tenant,
            scopes=scopes,
            now=self._clock(),
        )
        grant = await self.store.find_matching(match)
        if grant is not None:
            log.info("allowed %s for %s by grant %s", tool.name, ctx.principal.id, grant.id)
        return grant

    def issue(self, call: PendingCall, request: GrantRequest, *, by: Principal) -> Grant:
        """The grant an approval of ``call`` by ``by`` makes (not stored yet).

        A session grant of a call made without a session key covers the caller's other calls
        without one (they share one session, as in the policy's session state).

        Raises:
            DecisionInvalid: the rule does not offer the scope, or the duration is not above 0
                and at most ``grant_max``.
        """
        rule = call.rule_id or "(the policy's default)"
        if request.scope not in call.grants:
            raise DecisionInvalid(
                f"{call.id}: rule {rule} does not offer {request.scope!r} grants (it offers "
                f"{', '.join(call.grants)}): approve once, or list it in approval.grants"
            )
        limit = call.grant_max or DEFAULT_GRANT_MAX
        duration = limit if request.duration is None else request.duration
        if not 0 < duration <= limit:
            raise DecisionInvalid(
                f"a grant for {format_duration(duration)} is not allowed: rule {rule} grants "
                f"up to {format_duration(limit)} (approval.grant_max); ask for that or less"
            )
        now = self._clock()
        own = request.scope == "session" or request.principal
        return Grant(
            id=Grant.new_id(),
            scope=request.scope,
            tool=call.tool,
            server=call.server,
            rule_id=call.rule_id,
            principal=call.principal if own else None,
            session_id=call.session_id if request.scope == "session" else None,
            created_by=by.id,
            created_at=now,
            expires_at=now + duration,
            approval_id=call.id,
            tenant=call.tenant,
        )

    async def announce(self, grant: Grant) -> None:
        """Put a grant about to be made on record (before the approval that makes it)."""
        await self._record(events.grant_created(grant.to_json()))

    async def keep(self, grant: Grant) -> None:
        """Store a grant whose approval was applied: from now on it answers calls."""
        await self.store.add(grant)
        whose = grant.principal or "anyone"
        until = time.strftime("%H:%M:%SZ", time.gmtime(grant.expires_at))
        log.info(
            "grant %s: %s for %s (%s) until %s, by %s",
            *(grant.id, grant.tool, whose, grant.scope, until, grant.created_by),
        )

    async def visible(self, who: Principal, *, everything: bool) -> builtins.list[Grant]:
        """The grants ``who`` may see: of its tenant, made by it or by an approval of a call it
        may see; active ones only unless ``everything``."""
        active_at = None if everything else self._clock()
        grants = await self.store.list(tenant=who.tenant, active_at=active_at)
        return [g for g in grants if await self._may_see(g, who)]

    async def revoke(self, id: str, *, by: Principal) -> Grant:
        """Revoke grant ``id`` (compare-and-set); calls it covered ask again from now on.

        Raises:
            GrantNotFound: no such grant, or ``by`` may not see it.
            GrantConflict: it was revoked already, or it expired.
        """
        grant = await self.store.get(id)
        if grant is None or not await self._may_see(grant, by):
            raise GrantNotFound(id)
        revoked = await self.store.revoke(id, by=by.id, at=self._clock())
        log.info("grant %s revoked by %s", id, by.id)
        try:
            await self._record(events.grant_revoked(revoked.to_json()))
        except AuditUnavailable:  # the revocation stands: it only takes permission away
            log.error("grant %s revoked by %s, but not on record (audit log unwritable)", id, by.id)
        return revoked

    async def _may_see(self, grant: Grant, who: Principal) -> bool:
        if grant.tenant != who.tenant:
            return False
        if grant.created_by == who.id:
            return True
        call = await self._calls.get(grant.approval_id)
        return call is not None and may_see(call, who)
