"""The analytics read the window from each backend's records: calls held since the window
opened, the time a person took from the records' own timestamps (kept after the call ran), and
the calls waiting now."""

from __future__ import annotations

from dataclasses import replace

import pytest
from analytics_support import Clock
from pending_support import new_call

from gateway.approvals import PendingStore
from gateway.approvals.analytics import approval_stats, decision_seconds, read_window

pytestmark = pytest.mark.anyio


async def test_the_window_holds_the_calls_held_since_it_opened_with_their_decision_times(
    clocked_store: PendingStore, clock: Clock
) -> None:
    store, base = clocked_store, clock.now
    old = await store.create(new_call(now=base - 3600, ttl=60.0))
    ran = await store.create(new_call(now=base - 100, ttl=600.0))
    denied = await store.create(new_call(now=base - 90, ttl=600.0, tool="files__delete"))
    waiting = await store.create(new_call(now=base - 80, ttl=600.0))
    lapsed = await store.create(new_call(now=base - 70, ttl=30.0, rule_id=None))
    clock.now = base - 40  # the decisions: approve after 60 s (then it runs), deny after 50 s
    await store.transition(ran.id, expect={"pending"}, to="approved", decision="approve",
                           decided_by="user:alice")  # fmt: skip
    await store.transition(denied.id, expect={"pending"}, to="denied", decision="deny",
                           decided_by="user:carol")  # fmt: skip
    clock.now = base
    await store.transition(ran.id, expect={"approved"}, to="executing")
    await store.transition(ran.id, expect={"executing"}, to="done", delivered=True)
    await store.sweep_expired()

    calls, now_waiting = await read_window(store, None, since=base - 200, now=base)
    stats = approval_stats(calls, waiting=now_waiting, since=base - 200, until=base)

    assert {c.id for c in calls} == {ran.id, denied.id, waiting.id, lapsed.id}
    assert old.id not in {c.id for c in calls}
    assert now_waiting == 1
    overall = stats["overall"]
    assert (overall["held"], overall["pending"], overall["settled"]) == (4, 1, 3)
    assert overall["counts"] == {
        "approve": 1, "deny": 1, "edit": 0, "respond": 0, "expire": 1, "cancel": 0, "error": 0,
    }  # fmt: skip
    assert overall["rates"]["approve"] == pytest.approx(1 / 3, abs=1e-4)
    assert overall["time_to_decision"] == {"count": 2, "p50": 50.0, "p90": 60.0, "max": 60.0}
    assert stats["by_rule"]["-"]["counts"]["expire"] == 1
    assert stats["by_rule"]["ask-writes"]["held"] == 3
    assert stats["by_tool"]["files__delete"]["counts"]["deny"] == 1
    assert set(stats["by_approver"]) == {"user:alice", "user:carol"}
    assert stats["by_approver"]["user:alice"]["time_to_decision"]["p50"] == 60.0
    done = await store.get(ran.id)
    assert done is not None
    assert (done.state, done.decided_at) == ("done", base - 40)


def test_an_old_record_without_decided_at_is_timed_while_its_decision_is_its_last_change() -> None:
    held = new_call(now=1000.0)
    denied = replace(held, state="denied", decision="deny", updated_at=1040.0)
    delivered = replace(denied, delivered=True, updated_at=1090.0)
    ran = replace(held, state="done", decision="approve", updated_at=1500.0, delivered=True)
    lapsed = replace(held, state="expired", decision="expire", updated_at=1300.0)

    assert decision_seconds(denied) == 40.0
    assert decision_seconds(delivered) is None
    assert decision_seconds(ran) is None
    assert decision_seconds(lapsed) is None  # an expiry is no one's decision
    assert decision_seconds(replace(ran, decided_at=1020.0)) == 20.0
