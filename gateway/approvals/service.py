"""`ApprovalService`: the approval side of the gateway in one object, for every channel: pending
calls opened (`gateway.approvals.opening`), decided (`gateway.approvals.deciding`), settled from
outside (`gateway.approvals.outcomes`), and the grants some decisions make
(`gateway.approvals.granting`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.approvals.asked import Asked
from gateway.approvals.closing import Closing
from gateway.approvals.context_pack import context_pack, notice
from gateway.approvals.deciding import Decisions
from gateway.approvals.editing import EditCheck, SessionLoader
from gateway.approvals.grant_store import GrantStore
from gateway.approvals.granting import Grants
from gateway.approvals.grants import GrantRequest
from gateway.approvals.known_tools import Catalogue, KnownTools, Quarantine
from gateway.approvals.opening import Openings
from gateway.approvals.outcomes import Outcomes
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import ApprovalRecorder
from gateway.approvals.store import PendingStore, pending_call
from policies import Decision, PolicyHolder
from toolsets.context import CallContext, Principal
from toolsets.tooldef import ToolDef
from toolsets.validated import SchemaValidators

__all__ = ["ApprovalService"]


class ApprovalService:
    """The one place where pending calls are created, decided, executed and delivered.

    Args:
        store: The pending calls.
        policy: Decides an edited call again.
        catalogue: The served catalogue (a call's tool as it is now).
        quarantine: Which tools the catalogue leaves out while a changed definition waits.
        record: Puts an event on record (audit log, durably), then publishes it.
        validators: The tools' input schema validators (for edits).
        sessions: Session states, for deciding an edit again (None: none).
        max_pending: How many calls of one principal may wait at once.
        grant_store: Where the grants some decisions make are kept.
    """

    def __init__(
        self,
        store: PendingStore,
        policy: PolicyHolder,
        *,
        catalogue: Catalogue,
        quarantine: Quarantine | None = None,
        record: ApprovalRecorder,
        validators: SchemaValidators,
        sessions: SessionLoader | None = None,
        max_pending: int = 20,
        grant_store: GrantStore,
    ) -> None:
        self.store = store
        self.policy = policy
        self.record = record
        self.closing = Closing()
        """Closed when the gateway stops: held waits are released, and their calls stay
        pending."""
        self.tools = KnownTools(catalogue, quarantine)
        self.grants = Grants(grant_store, store, record, clock=store.now)
        self.sessions = sessions
        self.openings = Openings(store, record, max_pending=max_pending, notice=self._notice)
        self.outcomes = Outcomes(store, record, self.tools)
        self.decisions = Decisions(
            store,
            grants=self.grants,
            tools=self.tools,
            outcomes=self.outcomes,
            record=record,
            edits=EditCheck(self.tools, validators, policy, sessions),
        )

    async def _notice(self, call: PendingCall) -> dict[str, Any]:
        """``call``'s context pack as its ``tool.approval.requested`` event carries it."""
        session = self.sessions.ensure if self.sessions is not None else None
        pack = await context_pack(
            call, tools=self.tools, engine=self.policy.current, session=session
        )
        return notice(pack)

    def register_reviewed(self, tool: ToolDef) -> None:
        """Know ``tool``, a host's own function reviewed through the gateway (the
        ``human_in_the_loop`` decorators), so that edits of its calls are validated."""
        self.tools.register_reviewed(tool)

    async def request(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, decision: Decision
    ) -> PendingCall:
        """The pending call answering this call: a re-issued identical one, or a new one.

        Raises:
            TooManyPending: the caller has ``max_pending`` calls waiting already.
        """
        return await self.openings.request(tool, args, ctx, decision)

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
        return await self.decisions.apply(id, asked)

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
        return await self.outcomes.post_result(
            id, by=by, value=value, error=error, retry_after=retry_after
        )

    async def get(self, id: str) -> PendingCall:
        """The pending call ``id``.

        Raises:
            PendingNotFound: no such call.
        """
        return await pending_call(self.store, id)

    async def announce(self, call: PendingCall) -> None:
        """Put a call's outcome (decision, expiry, cancellation) on record."""
        await self.outcomes.announce(call)
