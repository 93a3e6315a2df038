"""The PostgreSQL stores beside the pending calls (the pending-call, grant and pin tests run on
PostgreSQL in tests/approvals): sessions shared by two replicas (read through, merged on
a race; written behind while no decision reads them), a wake-up from another replica by
NOTIFY, and recovery that fails only a dead replica's executions."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

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


def _book(schema: str, *, reads: list[bool] | None = None) -> SharedSessionBook:
    """A replica's book; while ``reads[0]`` is False no decision reads session state."""
    store = PostgresSessionStore(_database(schema))
    if reads is None:
        return SharedSessionBook(store, on_outage="fail_closed")
    return SharedSessionBook(store, on_outage="fail_closed", read_through=lambda: reads[0])


CTX = CallContext(principal=Principal(id="agent:ci"), session_id="s-1")


@contextlib.asynccontextmanager
async def closing(*books: SharedSessionBook) -> AsyncIterator[None]:
    """Close each book's database pool at the end."""
    try:
        yield
    finally:
        for book in books:
            await book._shared.database.close()


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


async def test_unread_session_state_is_written_behind_and_still_holds_every_replicas_calls(
    schema: str,
) -> None:
    reads = [False]  # the policy reads no session state: no query per call
    a, b = _book(schema, reads=reads), _book(schema, reads=reads)
    async with closing(a, b):
        await _two_replicas_writing_behind(a, b, reads)


async def _two_replicas_writing_behind(
    a: SharedSessionBook, b: SharedSessionBook, reads: list[bool]
) -> None:
    ctx = CallContext(principal=Principal(id="agent:ci"), session_id="s-behind")
    for n in range(3):
        (await a.ensure(ctx)).record("t__a", {"n": n})
        a.changed(ctx)
        (await b.ensure(ctx)).record("t__b", {"n": n})
        b.changed(ctx)
        await a.settle(ctx)
        await b.settle(ctx)
    assert (await b.ensure(ctx)).calls == 3  # B's own calls only: nothing was read or saved
    await a.flush()
    await b.flush()  # saved from a stale version: merged onto A's
    b.get(ctx).record("t__b", {"n": 3})  # a call while nothing is saving
    b.changed(ctx)
    await a.flush()
    await b.flush()
    reads[0] = True  # a reloaded policy reads ``session``: the next ensure reads through
    for book in (a, b):
        state = await book.ensure(ctx)
        assert state.calls == 7
        assert state.tool_calls == {"t__a": 3, "t__b": 4}
        assert state.last_args == {"t__a": {"n": 2}, "t__b": {"n": 3}}


async def test_one_flush_saves_many_sessions_and_merges_only_those_saved_elsewhere(
    schema: str,
) -> None:
    reads = [False]
    a, b = _book(schema, reads=reads), _book(schema, reads=reads)
    contexts = [
        CallContext(principal=Principal(id="agent:ci"), session_id=f"s-{n}") for n in range(5)
    ]
    async with closing(a, b):
        for ctx in contexts:  # A: five sessions, saved together
            (await a.ensure(ctx)).record("t__a", {})
            a.changed(ctx)
        (await b.ensure(contexts[0])).record("t__b", {})  # B: one of them, saved first
        b.changed(contexts[0])
        await b.flush()
        await a.flush()  # four saved in one statement, one merged onto B's
        assert not a._dirty
        reads[0] = True
        for ctx in contexts:
            state = await b.ensure(ctx)
            assert state.tool_calls == (
                {"t__a": 1, "t__b": 1} if ctx is contexts[0] else {"t__a": 1}
            )


class HeldSaves(PostgresSessionStore):
    """The real store, whose next save waits until the test lets it go."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)
        self.saving, self.go = anyio.Event(), anyio.Event()

    async def save_if(self, key: str, state: Mapping[str, Any], version: int) -> int | None:
        self.saving.set()
        await self.go.wait()
        return await super().save_if(key, state, version)


async def test_a_call_answered_while_its_session_is_being_merged_is_kept(schema: str) -> None:
    a, held = _book(schema), HeldSaves(_database(schema))
    b = SharedSessionBook(held, on_outage="fail_closed")
    async with closing(a, b):
        await _a_call_during_a_merge(a, b, held)


async def _a_call_during_a_merge(
    a: SharedSessionBook, b: SharedSessionBook, held: HeldSaves
) -> None:
    ctx = CallContext(principal=Principal(id="agent:ci"), session_id="s-during")
    (await a.ensure(ctx)).record("t__a", {})
    a.changed(ctx)
    (await b.ensure(ctx)).record("t__b", {})
    b.changed(ctx)
    await a.settle(ctx)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:  # B's save conflicts with A's: a merge
            tg.start_soon(b.settle, ctx)
            await held.saving.wait()
            b.get(ctx).record("t__late", {})  # answered while B's state is being saved
            b.changed(ctx)
            held.go.set()
    await b.settle(ctx)
    for book in (a, b):
        state = await book.ensure(ctx)
        assert state.tool_calls == {"t__a": 1, "t__b": 1, "t__late": 1}


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

        with anyio.fail_after(30):
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
