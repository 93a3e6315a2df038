"""`PendingStore`: the rules of durable pending calls (compare-and-set transitions, waiting,
recovery) over a backend's `gateway.approvals.records.PendingRecords`."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Literal, Self

import anyio

from gateway.approvals import _transitions
from gateway.approvals._query import Query
from gateway.approvals.errors import PendingNotFound
from gateway.approvals.pending import Kind, PendingCall, State, Vote
from gateway.approvals.records import PendingRecords
from gateway.approvals.writes import PendingListener, Writes

__all__ = ["REUSABLE_STATES", "PendingListener", "PendingStore", "RecoveryReport", "pending_call"]


REUSABLE_STATES: Final[frozenset[State]] = frozenset(
    {"pending", "approved", "executing", "denied", "done", "failed"}
)
"""States in which an undelivered call answers an identical re-issued call (see `find_reusable`)."""
_UNDECIDED: Final[frozenset[State]] = frozenset({"pending"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveryReport:
    """What `PendingStore.recover` found at startup.

    Attributes:
        expired: Pending calls whose deadline passed while the gateway was down, now ``expired``.
        interrupted: Calls found ``executing``, now ``failed`` (never re-run).
        pending: How many calls are still pending.
    """

    expired: tuple[PendingCall, ...]
    interrupted: tuple[PendingCall, ...]
    pending: int


class PendingStore:
    """Where pending calls live; the single authority on their state.

    States: ``pending -> approved | denied | expired | cancelled``, ``approved -> executing ->
    done | failed``; ``pending -> done`` for a ``respond`` decision; an ``external`` call goes
    ``pending -> done | failed | expired | cancelled``. Every change is a compare-and-set
    (`transition`): exactly one of several concurrent deciders wins, the others get
    `gateway.approvals.errors.PendingConflict` (an `ApprovalConflict`). The
    ``approved -> executing`` claim is what allows one, and only one, execution.

    A pending call whose ``expires_at`` has passed is recorded as ``expired`` (never ``denied``)
    by the first operation that touches it: `transition` (which then refuses), `wait`,
    `find_reusable`, `sweep_expired` or `recover`.

    The rules live here and in `gateway.approvals._transitions`; a backend keeps the records
    (`PendingRecords`), and each backend's store is this class over its records.

    Args:
        records: The backend's records (closed with this store).
        listener: Awaited after every write; its errors are logged, never raised (the write stands).
        clock: Wall-clock source in unix seconds, for expiry.
        poll_interval: Seconds between re-reads in `wait`, to see changes made by other processes.
    """

    def __init__(
        self,
        records: PendingRecords,
        *,
        listener: PendingListener | None = None,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.5,
    ) -> None:
        self.records = records
        self._writes = Writes(records, listener=listener)
        self.waiters = self._writes.waiters
        """This process's tasks in `wait`; a backend that hears of other processes' writes wakes
        them too."""
        self._clock = clock
        self._poll_interval = poll_interval

    def now(self) -> float:
        """The store's clock: unix seconds (what expiry is measured with)."""
        return self._clock()

    async def consume_nonce(self, nonce: str, *, expires_at: float) -> bool:
        """Atomically mark a single-use nonce used (a `gateway.approvals.sealing.NonceLedger`).

        Args:
            nonce: The nonce (from a sealed request state).
            expires_at: When it can be forgotten (it is refused elsewhere after that).

        Returns:
            True the first time a nonce is consumed, False on every replay.
        """
        return await self.records.consume_nonce(nonce, expires_at=expires_at, now=self._clock())

    async def close(self) -> None:
        """Release the backend's resources."""
        await self.records.close()

    async def create(self, call: PendingCall) -> PendingCall:
        """Store a new ``pending`` call; it is durable when this returns.

        Raises:
            ValueError: ``call`` is not pending, or its id is taken.
        """
        if call.state != "pending":
            raise ValueError(f"A new pending call must be 'pending', not {call.state!r}")
        await self._writes.insert(call)
        return call

    async def get(self, id: str) -> PendingCall | None:
        """The call with that id, or None."""
        return await self.records.load(id)

    async def list(
        self,
        *,
        state: State | Collection[State] | None = None,
        kind: Kind | None = None,
        principal: str | None = None,
        tool: str | None = None,
        limit: int = 100,
    ) -> builtins.list[PendingCall]:
        """Calls matching every given filter, newest first.

        Args:
            state: One state or several.
            kind: ``approval`` or ``external``.
            principal: The requesting principal's id.
            tool: The exposed tool name.
            limit: At most this many.
        """
        states = None if state is None else frozenset([state] if isinstance(state, str) else state)
        query = Query(states=states, kind=kind, principal=principal, tool=tool, limit=limit)
        return await self.records.query(query)

    async def transition(
        self, id: str, *, expect: Collection[State], to: State, **updates: Any
    ) -> PendingCall:
        """Move a call from one of ``expect`` to ``to``, atomically, changing ``updates`` too.

        Args:
            id: The call.
            expect: States the caller believes the call is in.
            to: The new state.
            **updates: Other fields to set (decided_by, decision, channel, message,
                override_args, result, error, retry_after, delivered).

        Returns:
            The record as stored after the transition.

        Raises:
            PendingNotFound: No call has that id.
            PendingConflict: The call is not in ``expect`` (or cannot go to ``to``); a pending
                call past its deadline is recorded ``expired`` and this is raised (unless
                ``to`` is ``expired``, which succeeds only once the deadline has passed).
            ValueError: No call could ever make this transition, or ``updates`` names a
                field fixed at creation.
        """
        _transitions.check_transition(expect, to, updates)
        plan = _transitions.transition(frozenset(expect), to, updates, self._clock())
        return await self._writes.apply(id, plan)

    async def task_ended(
        self,
        id: str,
        *,
        to: Literal["done", "failed"],
        result: Mapping[str, Any] | None,
        error: str | None = None,
    ) -> PendingCall:
        """Record the outcome of the upstream task the approved call ``id`` ran as, in place
        of its stand-in result (`gateway.approvals.wire.UPSTREAM_TASK`); once: a call whose
        outcome is recorded already is returned as it is.

        Raises:
            PendingNotFound: No call has that id.
        """
        changes = {"result": dict(result) if result is not None else None, "error": error}
        step = await self._writes.commit(id, _transitions.task_ended(to, changes, self._clock()))
        return step.call

    async def vote(
        self,
        id: str,
        vote: Vote,
        *,
        seen: int,
        stage: int,
        decided: Mapping[str, Any] | None = None,
    ) -> PendingCall:
        """Record an approving vote on a staged call, atomically, if it still has exactly
        ``seen`` votes and none by the same voter; the call moves to ``stage``, and with
        ``decided`` (decided_by, decision, channel, grant_id) it becomes ``approved``.

        Raises:
            PendingNotFound: No call has that id.
            PendingConflict: The call is not pending (a pending call past its deadline is
                recorded ``expired``), the voter voted already, or others voted meanwhile.
            ValueError: ``decided`` names a field a decision cannot set.
        """
        if decided is not None:
            _transitions.check_transition({"pending"}, "approved", decided)
        plan = _transitions.vote(vote, seen=seen, stage=stage, decided=decided, now=self._clock())
        return await self._writes.apply(id, plan)

    async def deliver(self, id: str) -> PendingCall:
        """Claim the right to hand a finished call's outcome to a caller; succeeds once.

        Raises:
            PendingNotFound: No call has that id.
            PendingConflict: The call is not finished, or its outcome was already delivered.
        """
        return await self._writes.apply(id, _transitions.deliver(self._clock()))

    async def find_reusable(
        self,
        principal: str,
        tool: str,
        args_sha256: str,
        *,
        session_id: str | None = None,
        kind: Kind | None = None,
    ) -> PendingCall | None:
        """The call an identical re-issued call should resume, or None to create a new one.

        The rule for re-issuing a call (same principal, tool and argument hash; same session
        when ``session_id`` is given): the newest *undelivered* call in `REUSABLE_STATES`
        answers it.

        - ``pending``: hold again (wait on it);
        - ``approved``: claim it with ``transition(expect={"approved"}, to="executing")`` and run
          it; only one claimer wins; finish with ``to="done"|"failed", delivered=True``;
        - ``executing``: another caller is running it; wait or report it as running;
        - ``denied`` / ``done`` / ``failed``: `deliver` it, then return the denial or result.

        Each outcome is delivered once: after `deliver` (or a finish with ``delivered=True``)
        the call is never reused, so a later identical call creates a new pending call. So do
        ``expired`` and ``cancelled`` calls. Pending calls past their deadline found here are
        recorded ``expired`` and skipped. The caller still checks that the record's
        ``tool_pin`` and ``policy_version`` match the current ones before executing it.
        ``connect`` calls (`gateway.connect`) answer only a search for that ``kind``.
        """
        query = Query(
            kind=kind,
            states=REUSABLE_STATES,
            principal=principal,
            session_id=session_id,
            tool=tool,
            args_sha256=args_sha256,
            delivered=False,
        )
        now = self._clock()
        for call in await self.records.query(query):
            if call.kind == "connect" and kind != "connect":
                continue
            step = await self._writes.commit(call.id, _transitions.expire_if_due(now))
            if not step.changed:
                return step.call
        return None

    # ``timeout`` is part of the result, not a cancel scope: on timeout the current record is
    # returned (a timeout is not an expiry), which `anyio.fail_after` cannot express.
    async def wait(
        self,
        id: str,
        timeout: float,
        *,
        while_in: Collection[State] = _UNDECIDED,
    ) -> PendingCall:
        """Wait until the call leaves ``while_in`` (default: until it is decided).

        Wakes at once on a transition made through this store object, and re-reads every
        ``poll_interval`` to see transitions made by other processes. A pending call reaching
        its deadline is recorded ``expired`` and returned.

        Returns:
            The call as soon as its state is not in ``while_in``, or its current record
            (still in ``while_in``) when ``timeout`` seconds pass. A timeout is not an expiry.

        Raises:
            PendingNotFound: No call has that id.
        """
        deadline = anyio.current_time() + timeout
        while True:
            with self.waiters.watching(id) as changed:
                call = await self._current(id)
                remaining = deadline - anyio.current_time()
                if call.state not in while_in or remaining <= 0:
                    return call
                nap = min(remaining, self._poll_interval)
                if call.state == "pending":
                    nap = min(nap, max(call.expires_at - self._clock(), 0.0))
                with anyio.move_on_after(nap):
                    await changed.wait()

    async def sweep_expired(self, now: float | None = None) -> builtins.list[PendingCall]:
        """Record every pending call past its deadline as ``expired``; return those changed."""
        now = self._clock() if now is None else now
        due = await self.records.query(Query(states=frozenset({"pending"}), due_by=now))
        steps = [
            await self._writes.commit(call.id, _transitions.expire_if_due(now)) for call in due
        ]
        return [step.call for step in steps if step.changed]

    async def recover(self) -> RecoveryReport:
        """Bring the store to a safe state at startup; run it before serving.

        Expires overdue pending calls, and fails every call found ``executing`` (it began
        before a crash and its outcome is unknown) with an "interrupted" error: such a call is
        never re-run. Pending calls stay pending.
        """
        expired = await self.sweep_expired()
        now = self._clock()
        running = await self.records.orphans()
        interrupted = [
            await self._writes.commit(c.id, _transitions.interrupt(now)) for c in running
        ]
        pending = await self.records.query(Query(states=frozenset({"pending"})))
        return RecoveryReport(
            expired=tuple(expired),
            interrupted=tuple(step.call for step in interrupted if step.changed),
            pending=len(pending),
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _current(self, id: str) -> PendingCall:
        """The stored record, expiring it first when it is pending past its deadline."""
        call = await self.records.load(id)
        if call is None:
            raise PendingNotFound(id)
        if call.state == "pending" and call.expires_at <= self._clock():
            return (await self._writes.commit(id, _transitions.expire_if_due(self._clock()))).call
        return call


async def pending_call(store: PendingStore, id: str) -> PendingCall:
    """The call ``id`` in ``store``.

    Raises:
        PendingNotFound: no such call.
    """
    call = await store.get(id)
    if call is None:
        raise PendingNotFound(id)
    return call
