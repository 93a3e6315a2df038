"""The PostgreSQL stores beside the pending calls (the pending-call, grant and pin tests run on
PostgreSQL in tests/approvals): sessions shared by two replicas (read through, merged on
a race), a wake-up from another replica by NOTIFY, and recovery that fails only a dead
replica's executions."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from pending_support import new_call
from pg_support import fresh_schema, pg_settings

from gateway.approvals import INTERRUPTED
from gateway.postgres.database import Database
from gateway.postgres.pending import PostgresPendingStore
from gateway.postgres.session_book import SharedSessionBook
from gateway.postgres.session_merge import merge
from gateway.postgres.sessions import PostgresSessionStore
from toolsets.context import CallContext, Principal


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


def _database(schema: str) -> Database:
    """A database handle of its own: another replica, as far as the server can tell."""
    return Database(pg_settings(schema))


def _book(schema: str) -> SharedSessionBook:
    return SharedSessionBook(PostgresSessionStore(_database(schema)), on_outage="fail_closed")


CTX = CallContext(principal=Principal(id="agent:ci"), session_id="s-1")


async def test_a_session_served_by_two_replicas_sees_every_call_even_made_at_once(
    schema: str,
) -> None:
    a, b = _book(schema), _book(schema)
    (await a.ensure(CTX)).record("t__read", {"n": 1})
    a.changed(CTX)
    await a.settle(CTX)
    assert (await b.ensure(CTX)).calls == 1  # read through: A's call, at once
    (await a.ensure(CTX)).set_variable("from_a", 1)
    (await b.ensure(CTX)).record("t__write", {"n": 2}, ok=False)
    a.get(CTX).record("t__read", {"n": 3})
    b.get(CTX).set_variable("from_b", 2)
    a.changed(CTX)
    b.changed(CTX)
    async with anyio.create_task_group() as tg:  # both saved from the same version: a race
        tg.start_soon(a.settle, CTX)
        tg.start_soon(b.settle, CTX)
    for book in (a, b):
        state = await book.ensure(CTX)
        assert state.calls == 3
        assert state.tool_calls == {"t__read": 2, "t__write": 1}
        assert state.succeeded == {"t__read": 2}
        assert state.last_args == {"t__read": {"n": 3}, "t__write": {"n": 2}}
        assert state.variables == {"from_a": 1, "from_b": 2}
        assert sorted(entry["tool"] for entry in state.history) == ["t__read"] * 2 + ["t__write"]
    for book in (a, b):
        await book._shared.database.close()


def _entry(tool: str, ok: bool = True) -> dict[str, object]:
    return {"tool": tool, "args_sha256": None, "ok": ok}


def test_a_merge_replays_one_replicas_changes_onto_the_others() -> None:
    base = {
        "id": "s", "calls": 1, "tool_calls": {"x": 1}, "succeeded": {"x": 1},
        "last_args": {"x": {"n": 1}}, "groups": ["g"], "variables": {"k": 1, "gone": 0},
        "history": [_entry("x")],
    }  # fmt: skip
    mine = base | {
        "calls": 2, "tool_calls": {"x": 2}, "succeeded": {"x": 2}, "last_args": {"x": {"n": 2}},
        "groups": ["g", "h"], "variables": {"k": 2}, "history": [_entry("x"), _entry("x")],
    }  # fmt: skip
    theirs = base | {
        "calls": 2, "tool_calls": {"x": 1, "y": 1}, "variables": {"k": 1, "gone": 0, "t": 3},
        "history": [_entry("x"), _entry("y", ok=False)],
    }  # fmt: skip
    merged = merge(base, mine, theirs)
    assert merged["calls"] == 3
    assert merged["tool_calls"] == {"x": 2, "y": 1}
    assert merged["succeeded"] == {"x": 2}
    assert merged["last_args"] == {"x": {"n": 2}}
    assert merged["groups"] == ["g", "h"]
    assert merged["variables"] == {"k": 2, "t": 3}
    assert [entry["tool"] for entry in merged["history"]] == ["x", "y", "x"]


async def test_a_decision_on_one_replica_wakes_the_waiter_on_another_at_once(schema: str) -> None:
    async with (
        PostgresPendingStore(_database(schema), poll_interval=3600) as holder,
        PostgresPendingStore(_database(schema)) as decider,
    ):
        call = await holder.create(new_call())
        seen: list[str] = []

        async def wait() -> None:
            seen.append((await holder.wait(call.id, timeout=3600)).state)

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait)
                await anyio.wait_all_tasks_blocked()
                await decider.transition(call.id, expect={"pending"}, to="approved")
    assert seen == ["approved"]


async def test_recovery_fails_only_the_executions_of_a_replica_that_is_gone(schema: str) -> None:
    survivor = PostgresPendingStore(_database(schema))
    async with PostgresPendingStore(_database(schema)) as alive:
        running = await alive.create(new_call())
        await alive.transition(running.id, expect={"pending"}, to="approved")
        await alive.transition(running.id, expect={"approved"}, to="executing")
        report = await survivor.recover()
        assert report.interrupted == ()  # its replica holds its liveness lock
    report = await survivor.recover()  # that replica is gone now
    failed = await survivor.get(running.id)
    await survivor.close()
    assert [c.id for c in report.interrupted] == [running.id]
    assert failed is not None
    assert (failed.state, failed.error) == ("failed", INTERRUPTED)
