"""SQLite store: durability across restarts and crashes, several processes on one file."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from pending_support import helper_command, helper_env, new_call

from gateway.approvals import INTERRUPTED, PendingCall, PendingStoreError
from gateway.sqlite.pending import SQLitePendingStore
from toolsets.errors import ApprovalConflict

pytestmark = pytest.mark.anyio


async def test_pending_calls_survive_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLitePendingStore(path) as store:
        calls = [await store.create(new_call(call_id=f"call-{i}")) for i in range(5)]
        approved = await store.transition(calls[0].id, expect={"pending"}, to="approved")
        assert await store.consume_nonce("n-1", expires_at=approved.expires_at)
    async with SQLitePendingStore(path) as reopened:
        assert await reopened.get(calls[0].id) == approved
        for call in calls[1:]:
            assert await reopened.get(call.id) == call
        assert not await reopened.consume_nonce("n-1", expires_at=approved.expires_at)


async def test_a_killed_gateway_loses_nothing_and_never_reruns_an_execution(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pending.db"
    command = helper_command("crash", str(path), "3")
    with anyio.fail_after(60):
        async with await anyio.open_process(
            command, env=helper_env(), stderr=subprocess.DEVNULL
        ) as process:
            assert process.stdout is not None
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 65536)
            process.send_signal(signal.SIGKILL)
            assert await process.wait() == -signal.SIGKILL
    ids = json.loads(line)

    async with SQLitePendingStore(path) as store:
        for id in ids["pending"]:
            call = await store.get(id)
            assert call is not None
            assert call.state == "pending"
        assert (await store.get(ids["executing"])) is not None
        report = await store.recover()
        failed = await store.get(ids["executing"])
        assert failed is not None
        assert (failed.state, failed.error) == ("failed", INTERRUPTED)
        assert [c.id for c in report.interrupted] == [ids["executing"]]
        assert report.pending == 3
        with pytest.raises(ApprovalConflict):
            await store.transition(ids["executing"], expect={"approved"}, to="executing")


async def test_wait_sees_a_decision_made_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLitePendingStore(path, poll_interval=0.05) as store:
        call = await store.create(new_call())
        seen: list[PendingCall] = []

        async def waiter() -> None:
            seen.append(await store.wait(call.id, timeout=60))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(waiter)
                approve = helper_command("approve", str(path), call.id)
                await anyio.run_process(approve, env=helper_env())
        assert [(c.state, c.decided_by) for c in seen] == [("approved", "other-process")]


async def test_two_stores_on_one_file_claim_an_execution_once(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLitePendingStore(path) as first, SQLitePendingStore(path) as second:
        call = await first.create(new_call())
        await second.transition(call.id, expect={"pending"}, to="approved")
        claims: list[str] = []

        async def claim(store: SQLitePendingStore, name: str) -> None:
            try:
                await store.transition(call.id, expect={"approved"}, to="executing")
            except ApprovalConflict:
                return
            claims.append(name)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(claim, first, f"first-{i}")
                    tg.start_soon(claim, second, f"second-{i}")
        assert len(claims) == 1


async def test_a_store_written_by_a_newer_lockgate_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLitePendingStore(path) as store:
        await store.create(new_call())
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    async with SQLitePendingStore(path) as newer:
        with pytest.raises(PendingStoreError, match="schema version 99"):
            await newer.list()


async def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    path.write_bytes(b"definitely not sqlite " * 200)
    async with SQLitePendingStore(path) as store:
        with pytest.raises(PendingStoreError, match="Cannot open"):
            await store.get("ap_x")


async def test_a_corrupt_record_is_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "pending.db"
    async with SQLitePendingStore(path) as store:
        call = await store.create(new_call())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE pending_calls SET record = '{\"id\": 1}'")
    conn.close()
    async with SQLitePendingStore(path) as store:
        with pytest.raises(PendingStoreError, match="Corrupt"):
            await store.get(call.id)


async def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    store = SQLitePendingStore(tmp_path / "pending.db")
    await store.create(new_call())
    await store.close()
    with pytest.raises(PendingStoreError, match="closed"):
        await store.list()
    await store.close()
