"""Two ``lockgate serve`` replicas on one PostgreSQL schema act as one gateway: a call held on
one is decided through the other, decisions race to one winner, a killed replica's held call is
finished by the other, and a session's history follows it across replicas."""

from __future__ import annotations

import uuid

import anyio
import pytest
from approvals_e2e_support import (
    api_client,
    decide,
    marker,
    pending_meta,
    text_of,
    wait_for_call,
    while_held,
)
from mcp_types import CallToolResult
from pg_e2e_support import BUDGET_TOOL, Replicas, replica, session_client
from pg_support import restart_postgres
from support import MODES

HELD = "recorder__record"
"""Held for a security approver for up to 10 s (the approvals suite's policy)."""
BRIEF = "recorder__record_brief"
"""Held for 0.5 s, then answered "pending"."""


@pytest.mark.serial  # a 1 s bound on the wake-up (against the 5 s re-read): runs alone
@pytest.mark.parametrize("mode", MODES)
async def test_a_call_held_on_a_and_approved_through_b_completes_on_a_at_once_and_once(
    replicas: Replicas, mode: str
) -> None:
    value = marker(f"held-{mode}")
    decided_at: list[float] = []

    async def call() -> tuple[CallToolResult, float]:
        async with session_client(replicas.a.mcp_url, mode) as client:
            result = await client.call_tool(HELD, {"value": value})
        return result, anyio.current_time()

    async def approve_on_b() -> None:
        async with api_client(replicas.b.base) as api:
            held = await wait_for_call(api, value)
            assert (await decide(api, held["id"], "approve")).status_code == 200
            decided_at.append(anyio.current_time())  # on record: A may go now

    with anyio.fail_after(20):
        (result, answered_at), _ = await while_held(call, approve_on_b)
    assert not result.is_error, result
    assert text_of(result) == f"recorded {value}"
    assert replicas.executions(value) == [{"value": value}]
    # Woken by NOTIFY, not by the 5 s safety re-read (the answer may even beat B's response).
    assert answered_at - decided_at[0] < 1.0, answered_at - decided_at[0]


async def test_fifty_decisions_split_across_both_replicas_have_exactly_one_winner(
    replicas: Replicas,
) -> None:
    value = marker("race")
    async with session_client(replicas.a.mcp_url, "auto") as client:
        held = pending_meta(await client.call_tool(BRIEF, {"value": value}))
    statuses: list[int] = []

    async def decide_on(base: str, verdict: str) -> None:
        async with api_client(base) as api:
            statuses.append((await decide(api, held["id"], verdict)).status_code)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for i in range(50):
                base = (replicas.a if i % 2 else replicas.b).base
                tg.start_soon(decide_on, base, "approve" if i % 3 else "deny")
    assert sorted(statuses) == [200] + [409] * 49
    async with api_client(replicas.b.base) as api:
        final = (await api.get(f"/api/approvals/{held['id']}")).json()
    assert final["state"] in {"approved", "denied"}


async def test_a_replica_killed_holding_a_call_leaves_it_to_be_decided_and_run_once_elsewhere(
    replicas: Replicas,
) -> None:
    value = marker("killed")
    async with replica(replicas.config, "doomed") as doomed:

        async def call_and_die() -> None:
            with pytest.raises(Exception):  # noqa: B017, PT011 (the server died mid-request)
                async with session_client(doomed.mcp_url, "auto") as client:
                    await client.call_tool(HELD, {"value": value})

        async def kill_while_held() -> None:
            async with api_client(replicas.b.base) as api:
                await wait_for_call(api, value)
            doomed.kill()

        with anyio.fail_after(30):
            await while_held(call_and_die, kill_while_held)
    async with api_client(replicas.b.base) as api:
        held = await wait_for_call(api, value)
        assert (await decide(api, held["id"], "approve")).status_code == 200
    async with session_client(replicas.b.mcp_url, "auto") as client:
        result = await client.call_tool(HELD, {"value": value})
    assert text_of(result) == f"recorded {value}"
    assert replicas.executions(value) == [{"value": value}]


async def test_a_2026_session_keeps_its_call_budget_across_replicas(replicas: Replicas) -> None:
    session = f"s-{uuid.uuid4().hex}"
    texts: list[str] = []
    for i in range(4):
        side = replicas.a if i % 2 == 0 else replicas.b
        async with session_client(side.mcp_url, "auto", session) as client:
            texts.append(text_of(await client.call_tool(BUDGET_TOOL, {"value": marker("b")})))
    assert texts[:3] == [t for t in texts[:3] if t.startswith("recorded ")]
    assert texts[3] == "The budget of three calls per session is used up."
    async with session_client(replicas.b.mcp_url, "auto", f"s-{uuid.uuid4().hex}") as client:
        fresh = await client.call_tool(BUDGET_TOOL, {"value": marker("b")})
    assert text_of(fresh).startswith("recorded ")


async def test_the_api_of_either_replica_lists_the_same_held_calls(replicas: Replicas) -> None:
    value = marker("listed")
    async with session_client(replicas.b.mcp_url, "legacy") as client:
        held = pending_meta(await client.call_tool(BRIEF, {"value": value}))
    for side in (replicas.a, replicas.b):
        async with api_client(side.base) as api:
            found = await wait_for_call(api, value)
        assert found["id"] == held["id"]


@pytest.mark.serial  # restarts the server every test worker uses: runs alone
async def test_a_postgres_restart_loses_no_decision_and_doubles_no_execution(
    replicas: Replicas,
) -> None:
    """Self-contained: a call held on A, the server restarted, the call approved through B
    (retried while B's store is still reconnecting), run once on A; both replicas serve on."""
    value = marker("restart")

    async def call() -> CallToolResult:
        async with session_client(replicas.a.mcp_url, "auto") as client:
            return await client.call_tool(HELD, {"value": value})

    async def restart_then_approve() -> None:
        async with api_client(replicas.b.base) as api:
            held = await wait_for_call(api, value)
            await restart_postgres()
            while (response := await decide(api, held["id"], "approve")).status_code == 503:
                pass  # B rode out the restart for connect_timeout; the approver tries again
            assert response.status_code == 200, response.text

    with anyio.fail_after(30):
        result, _ = await while_held(call, restart_then_approve)
    assert text_of(result) == f"recorded {value}"
    assert replicas.executions(value) == [{"value": value}]
    for side in (replicas.a, replicas.b):
        async with session_client(side.mcp_url, "auto") as client:
            after = await client.call_tool(BUDGET_TOOL, {"value": marker("after")})
        assert text_of(after).startswith("recorded ")
