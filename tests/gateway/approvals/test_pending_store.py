"""The PendingStore contract, run against every backend (see conftest.py)."""

from __future__ import annotations

import time

import anyio
import pytest
from pending_support import StoreFactory, new_call

from gateway.approvals import (
    PendingCall,
    PendingConflict,
    PendingNotFound,
    PendingStore,
    State,
)
from toolsets.errors import ApprovalConflict, LockgateError

pytestmark = pytest.mark.anyio


def overdue(**overrides: object) -> PendingCall:
    """A pending call whose deadline passed a minute ago."""
    return new_call(now=time.time() - 360, ttl=300.0, **overrides)


async def test_created_call_reads_back_identical(store: PendingStore) -> None:
    call = await store.create(new_call())
    assert call.state == "pending"
    assert call.id.startswith("ap_")
    assert await store.get(call.id) == call
    assert await store.get("ap_missing") is None


async def test_create_refuses_a_duplicate_id_and_a_non_pending_record(store: PendingStore) -> None:
    call = await store.create(new_call())
    with pytest.raises(ValueError, match="already exists"):
        await store.create(call)
    approved = await store.transition(call.id, expect={"pending"}, to="approved")
    with pytest.raises(ValueError, match="must be 'pending'"):
        await store.create(approved)


async def test_list_filters_and_returns_newest_first(store: PendingStore) -> None:
    base = time.time()
    first = await store.create(new_call(now=base, tool="a"))
    second = await store.create(new_call(now=base + 1, tool="b", principal="agent:other"))
    third = await store.create(new_call(now=base + 2, tool="a", kind="external"))
    await store.transition(second.id, expect={"pending"}, to="denied")

    assert [c.id for c in await store.list()] == [third.id, second.id, first.id]
    assert [c.id for c in await store.list(limit=2)] == [third.id, second.id]
    assert [c.id for c in await store.list(state="denied")] == [second.id]
    assert [c.id for c in await store.list(state=["pending", "denied"], tool="a")] == [
        third.id,
        first.id,
    ]
    assert [c.id for c in await store.list(kind="external")] == [third.id]
    assert [c.id for c in await store.list(principal="agent:other")] == [second.id]


async def test_a_second_decision_conflicts_naming_the_call_and_its_state(
    store: PendingStore,
) -> None:
    call = await store.create(new_call())
    approved = await store.transition(
        call.id, expect={"pending"}, to="approved", decided_by="alice", decision="approve"
    )
    assert (approved.state, approved.decided_by, approved.decision) == (
        "approved",
        "alice",
        "approve",
    )
    for to in ("approved", "denied"):
        with pytest.raises(ApprovalConflict, match=rf"{call.id}.*'approved'") as caught:
            await store.transition(call.id, expect={"pending"}, to=to)
        assert isinstance(caught.value, PendingConflict)
        assert caught.value.call == approved
    assert await store.get(call.id) == approved


async def test_transition_of_an_unknown_call_raises_not_found(store: PendingStore) -> None:
    with pytest.raises(PendingNotFound, match="ap_nope") as caught:
        await store.transition("ap_nope", expect={"pending"}, to="approved")
    assert isinstance(caught.value, LockgateError)


async def test_transition_refuses_impossible_moves_and_fixed_fields(store: PendingStore) -> None:
    call = await store.create(new_call())
    with pytest.raises(ValueError, match="No transition from 'pending' to 'executing'"):
        await store.transition(call.id, expect={"pending"}, to="executing")
    with pytest.raises(ValueError, match="cannot change"):
        await store.transition(call.id, expect={"pending"}, to="approved", args={"x": 1})
    assert await store.get(call.id) == call


async def test_concurrent_deciders_have_exactly_one_winner(store: PendingStore) -> None:
    call = await store.create(new_call())
    winners: list[str] = []
    conflicts: list[str] = []

    async def decide(i: int) -> None:
        to: State = "approved" if i % 2 else "denied"
        try:
            await store.transition(call.id, expect={"pending"}, to=to, decided_by=f"approver-{i}")
        except ApprovalConflict:
            conflicts.append(f"approver-{i}")
        else:
            winners.append(f"approver-{i}")

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(decide, i)
    assert len(winners) == 1
    assert len(conflicts) == 19
    stored = await store.get(call.id)
    assert stored is not None
    assert stored.decided_by == winners[0]


async def test_an_approved_call_is_claimed_for_execution_exactly_once(store: PendingStore) -> None:
    call = await store.create(new_call())
    await store.transition(call.id, expect={"pending"}, to="approved")
    claims: list[int] = []

    async def claim(i: int) -> None:
        try:
            await store.transition(call.id, expect={"approved"}, to="executing")
        except ApprovalConflict:
            return
        claims.append(i)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(claim, i)
    assert len(claims) == 1
    done = await store.transition(
        call.id, expect={"executing"}, to="done", result={"content": [], "isError": False}
    )
    assert done.is_terminal


async def test_a_decision_after_the_deadline_records_expired_not_denied(
    store: PendingStore,
) -> None:
    call = await store.create(overdue())
    with pytest.raises(ApprovalConflict, match="'expired'"):
        await store.transition(call.id, expect={"pending"}, to="denied", decided_by="alice")
    stored = await store.get(call.id)
    assert stored is not None
    assert (stored.state, stored.decision, stored.decided_by) == ("expired", "expire", None)
    with pytest.raises(ApprovalConflict, match="'expired'"):
        await store.transition(call.id, expect={"pending"}, to="approved")


async def test_sweep_expires_only_overdue_pending_calls(store: PendingStore) -> None:
    late = await store.create(overdue())
    later = await store.create(overdue(call_id="call-2"))
    fresh = await store.create(new_call())
    made = await store.create(overdue(call_id="call-3"))
    already = await store.transition(made.id, expect={"pending"}, to="expired")
    swept = await store.sweep_expired()
    assert {c.id for c in swept} == {late.id, later.id}
    assert all((c.state, c.decision) == ("expired", "expire") for c in swept)
    assert await store.get(fresh.id) == fresh
    assert await store.get(already.id) == already
    assert await store.sweep_expired() == []


async def test_a_call_cannot_be_expired_before_its_deadline(store: PendingStore) -> None:
    call = await store.create(new_call())
    with pytest.raises(ApprovalConflict, match="before its deadline"):
        await store.transition(call.id, expect={"pending"}, to="expired")
    assert await store.get(call.id) == call
    late = await store.create(overdue())
    expired = await store.transition(late.id, expect={"pending"}, to="expired")
    assert (expired.state, expired.decision) == ("expired", "expire")


async def test_an_empty_state_filter_matches_nothing(store: PendingStore) -> None:
    await store.create(new_call())
    assert await store.list(state=[]) == []


async def test_wait_wakes_on_a_transition_through_the_store(make_store: StoreFactory) -> None:
    store = make_store(poll_interval=3600)  # only the in-process wake-up can end the wait in time
    call = await store.create(new_call())
    seen: list[PendingCall] = []

    async def waiter() -> None:
        seen.append(await store.wait(call.id, timeout=3600))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            await store.transition(call.id, expect={"pending"}, to="approved")
    assert [c.state for c in seen] == ["approved"]


async def test_wait_times_out_returning_the_still_pending_call(store: PendingStore) -> None:
    call = await store.create(new_call())
    with anyio.fail_after(30):
        result = await store.wait(call.id, timeout=0.05)
    assert result == call


async def test_wait_records_expiry_when_the_deadline_passes(store: PendingStore) -> None:
    call = await store.create(new_call(ttl=0.05))
    with anyio.fail_after(30):
        result = await store.wait(call.id, timeout=3600)
    assert (result.state, result.decision) == ("expired", "expire")


async def test_wait_can_wait_for_an_execution_to_finish(store: PendingStore) -> None:
    call = await store.create(new_call())
    await store.transition(call.id, expect={"pending"}, to="approved")
    await store.transition(call.id, expect={"approved"}, to="executing")
    assert (await store.wait(call.id, timeout=1)).state == "executing"
    assert (await store.wait(call.id, timeout=0.01, while_in={"executing"})).state == "executing"
    await store.transition(call.id, expect={"executing"}, to="failed", error="boom")
    done = await store.wait(call.id, timeout=3600, while_in={"executing"})
    assert (done.state, done.error) == ("failed", "boom")


async def test_waiting_on_a_running_call_past_its_decision_deadline_naps(
    make_store: StoreFactory,
) -> None:
    now = [time.time()]
    reads: list[float] = []

    def clock() -> float:
        reads.append(now[0])
        return now[0]

    store = make_store(clock=clock, poll_interval=3600)
    call = await store.create(new_call(now=now[0]))
    await store.transition(call.id, expect={"pending"}, to="approved")
    await store.transition(call.id, expect={"approved"}, to="executing")
    now[0] += 3600  # the decision deadline is long gone; the execution is not bound by it
    reads.clear()
    with anyio.fail_after(30):
        still = await store.wait(call.id, timeout=0.2, while_in={"executing"})
    assert still.state == "executing"
    assert len(reads) < 5  # a nap per poll, not a busy loop


async def test_wait_on_an_unknown_call_raises_not_found(store: PendingStore) -> None:
    with pytest.raises(PendingNotFound):
        await store.wait("ap_nope", timeout=1)
