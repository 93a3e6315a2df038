"""Re-issued calls, delivery, decision kinds, listeners, recovery and nonces, on every backend."""

from __future__ import annotations

import time

import anyio
import pytest
from pending_support import StoreFactory, new_call

from gateway.approvals import INTERRUPTED, PendingCall, PendingStore
from toolsets.errors import ApprovalConflict

pytestmark = pytest.mark.anyio

RESULT = {"content": [{"type": "text", "text": "created #42"}], "isError": False}


async def reusable(store: PendingStore, call: PendingCall) -> PendingCall | None:
    return await store.find_reusable(call.principal, call.tool, call.args_sha256)


async def test_a_reissued_call_holds_again_while_pending(store: PendingStore) -> None:
    call = await store.create(new_call())
    assert await reusable(store, call) == call
    assert await store.find_reusable("agent:other", call.tool, call.args_sha256) is None
    assert await store.find_reusable(call.principal, "other_tool", call.args_sha256) is None
    assert await store.find_reusable(call.principal, call.tool, "0" * 64) is None
    found = await store.find_reusable(
        call.principal, call.tool, call.args_sha256, session_id="session-1"
    )
    assert found == call
    other_session = await store.find_reusable(
        call.principal, call.tool, call.args_sha256, session_id="session-2"
    )
    assert other_session is None


async def test_a_reissue_after_approval_runs_once_then_starts_afresh(store: PendingStore) -> None:
    call = await store.create(new_call())
    await store.transition(call.id, expect={"pending"}, to="approved", decided_by="alice")
    found = await reusable(store, call)
    assert found is not None
    assert found.state == "approved"
    await store.transition(found.id, expect={"approved"}, to="executing")
    assert (await reusable(store, call)) is not None  # executing: another caller is running it
    with pytest.raises(ApprovalConflict):
        await store.transition(found.id, expect={"approved"}, to="executing")
    await store.transition(found.id, expect={"executing"}, to="done", result=RESULT, delivered=True)
    assert await reusable(store, call) is None


async def test_a_denial_is_delivered_once_then_a_new_call_is_held(store: PendingStore) -> None:
    call = await store.create(new_call())
    await store.transition(
        call.id, expect={"pending"}, to="denied", decision="deny", message="not on Fridays"
    )
    found = await reusable(store, call)
    assert found is not None
    delivered = await store.deliver(found.id)
    assert (delivered.state, delivered.message, delivered.delivered) == (
        "denied",
        "not on Fridays",
        True,
    )
    with pytest.raises(ApprovalConflict, match="already delivered"):
        await store.deliver(found.id)
    assert await reusable(store, call) is None


async def test_only_finished_calls_can_be_delivered(store: PendingStore) -> None:
    call = await store.create(new_call())
    with pytest.raises(ApprovalConflict, match="no outcome yet"):
        await store.deliver(call.id)


async def test_expired_and_cancelled_calls_are_not_reused(store: PendingStore) -> None:
    expired = await store.create(new_call(now=time.time() - 400, call_id="old"))
    assert await reusable(store, expired) is None
    assert (await store.get(expired.id)) is not None
    cancelled = await store.create(new_call(call_id="withdrawn"))
    await store.transition(cancelled.id, expect={"pending"}, to="cancelled", decision="cancel")
    assert await reusable(store, cancelled) is None
    stored = await store.get(expired.id)
    assert stored is not None
    assert stored.state == "expired"


async def test_the_newest_open_call_answers_a_reissue(store: PendingStore) -> None:
    older = await store.create(new_call(now=time.time() - 10, call_id="older"))
    newer = await store.create(new_call(call_id="newer"))
    assert older.args_sha256 == newer.args_sha256
    assert await reusable(store, older) == newer


async def test_a_respond_decision_finishes_the_call_with_the_text(store: PendingStore) -> None:
    call = await store.create(new_call(decisions=("approve", "deny", "respond")))
    done = await store.transition(
        call.id, expect={"pending"}, to="done", decision="respond", message="use issue #12"
    )
    assert (done.state, done.message, done.is_terminal) == ("done", "use issue #12", True)


async def test_an_edit_stores_new_arguments_and_keeps_the_requested_ones(
    store: PendingStore,
) -> None:
    call = await store.create(new_call())
    edited = {"title": "Build is red (edited)"}
    approved = await store.transition(
        call.id, expect={"pending"}, to="approved", decision="edit", override_args=edited
    )
    assert approved.effective_args == edited
    assert approved.args == call.args
    assert await reusable(store, call) == approved
    assert call.effective_args == call.args


async def test_an_external_call_finishes_with_a_worker_result_or_error(store: PendingStore) -> None:
    ok = await store.create(new_call(kind="external", call_id="ok"))
    with pytest.raises(ApprovalConflict):
        await store.transition(ok.id, expect={"pending"}, to="approved")
    done = await store.transition(
        ok.id, expect={"pending"}, to="done", decision="result", result=RESULT, channel="worker"
    )
    assert done.result == RESULT
    bad = await store.create(new_call(kind="external", call_id="bad"))
    failed = await store.transition(
        bad.id, expect={"pending"}, to="failed", decision="error", error="quota", retry_after=30.0
    )
    assert (failed.state, failed.error, failed.retry_after) == ("failed", "quota", 30.0)


async def test_the_listener_hears_every_write_and_cannot_undo_one(
    make_store: StoreFactory,
) -> None:
    heard: list[tuple[str, str]] = []

    async def listener(call: PendingCall) -> None:
        heard.append((call.id, call.state))
        if call.state == "approved":
            raise RuntimeError("subscriber bug")

    store = make_store(listener=listener)
    call = await store.create(new_call())
    approved = await store.transition(call.id, expect={"pending"}, to="approved")
    assert approved.state == "approved"
    with pytest.raises(ApprovalConflict):
        await store.transition(call.id, expect={"pending"}, to="denied")
    assert heard == [(call.id, "pending"), (call.id, "approved")]


async def test_recover_fails_interrupted_executions_and_keeps_pending_ones(
    store: PendingStore,
) -> None:
    waiting = await store.create(new_call(call_id="waiting"))
    late = await store.create(new_call(call_id="late", now=time.time() - 400))
    running = await store.create(new_call(call_id="running"))
    await store.transition(running.id, expect={"pending"}, to="approved")
    await store.transition(running.id, expect={"approved"}, to="executing")

    report = await store.recover()

    assert report.pending == 1
    assert [c.id for c in report.expired] == [late.id]
    assert [(c.id, c.state, c.error) for c in report.interrupted] == [
        (running.id, "failed", INTERRUPTED)
    ]
    assert await store.get(waiting.id) == waiting
    assert (await store.recover()).interrupted == ()


async def test_a_nonce_is_consumed_once(store: PendingStore) -> None:
    expires = time.time() + 60
    assert await store.consume_nonce("n-1", expires_at=expires)
    assert not await store.consume_nonce("n-1", expires_at=expires)
    assert await store.consume_nonce("n-2", expires_at=expires)


async def test_a_nonce_is_forgotten_after_it_expires(store: PendingStore) -> None:
    assert await store.consume_nonce("n-old", expires_at=time.time() - 1)
    assert await store.consume_nonce("n-new", expires_at=time.time() + 60)
    assert await store.consume_nonce("n-old", expires_at=time.time() - 1)


async def test_concurrent_nonce_consumers_have_one_winner(store: PendingStore) -> None:
    wins: list[bool] = []

    async def consume() -> None:
        wins.append(await store.consume_nonce("n-race", expires_at=time.time() + 60))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(consume)
    assert sorted(wins) == [False] * 19 + [True]


def test_a_record_round_trips_through_json() -> None:
    call = new_call(decisions=("approve", "deny", "edit"), approvers=("role:oncall",))
    data = call.to_json()
    assert data["decisions"] == ["approve", "deny", "edit"]
    assert PendingCall.from_json(data) == call
    with pytest.raises(ValueError, match="Unknown"):
        PendingCall.from_json({**data, "extra": 1})
    with pytest.raises(ValueError, match="Missing"):
        PendingCall.from_json({k: v for k, v in data.items() if k != "tool"})
    with pytest.raises(ValueError, match="state/kind"):
        PendingCall.from_json({**data, "state": "maybe"})


def test_a_new_call_keeps_a_detached_copy_of_its_arguments() -> None:
    labels = ["a"]
    call = new_call(args={"title": "x", "labels": labels})
    labels.append("b")
    assert call.args == {"title": "x", "labels": ["a"]}
    assert call.expires_at - call.created_at == 300.0
    with pytest.raises(TypeError):
        new_call(args={"when": object()})
