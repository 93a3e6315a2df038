"""A gateway killed with pending calls loses none and never runs one twice.

``lockgate serve -c CONFIG`` runs as a subprocess with a SQLite pending-call store; calls are held
(and one approved but not yet re-issued), the process gets SIGKILL, a new process starts on the
same store, and the calls are decided and re-issued from a new client.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import httpx2
from approvals_e2e_support import (
    AGENT,
    agent_client,
    api_client,
    decide,
    e2e_config,
    executions,
    marker,
    pending_meta,
    text_of,
)
from mcp import Client
from mcp_types import CallToolResult
from support import MODES, free_port

BRIEF = "recorder__record_brief"


@contextlib.asynccontextmanager
async def lockgate_serve(config: Path, base: str, stderr: Path) -> AsyncIterator[anyio.abc.Process]:
    """``lockgate serve`` as a subprocess; yields it once ``/healthz`` answers."""
    with stderr.open("ab") as errors:
        process = await anyio.open_process(
            [sys.executable, "-m", "gateway.cli", "serve", "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        await _healthy(base)
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
        with anyio.CancelScope(shield=True):
            await process.wait()
        await process.aclose()


async def _healthy(base: str) -> None:
    # Polling is the only readiness signal another process gives.
    async with httpx2.AsyncClient(base_url=base, timeout=5) as http:
        with anyio.fail_after(30):
            while True:
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.05)


async def test_pending_calls_survive_a_kill_and_each_runs_exactly_once(tmp_path: Path) -> None:
    """One kill and restart serves both eras: each era's client holds, then re-issues, its own."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "executions.jsonl"
    config = e2e_config(tmp_path, log=log, port=port)
    stderr = tmp_path / "lockgate.stderr"
    waiting = {mode: [marker(f"restart-{mode}") for _ in range(2)] for mode in MODES}
    approved = {mode: marker(f"restart-approved-{mode}") for mode in MODES}
    values = {mode: [*waiting[mode], approved[mode]] for mode in MODES}
    ids: dict[str, str] = {}

    async with lockgate_serve(config, base, stderr) as first, api_client(base) as api:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for mode in MODES:
                    tg.start_soon(_hold_all, f"{base}/mcp", mode, values[mode], ids)
            for mode in MODES:
                response = await decide(api, ids[approved[mode]], "approve")
                assert response.status_code == 200, response.text
        first.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL

    every = [v for mode in MODES for v in values[mode]]
    assert all(executions(log, value) == [] for value in every)

    runs: dict[str, CallToolResult] = {}
    again: dict[str, CallToolResult] = {}
    async with lockgate_serve(config, base, stderr), api_client(base) as api:
        listed = (await api.get("/api/approvals", params={"state": "pending"})).json()["items"]
        kept = [(await api.get(f"/api/approvals/{ids[approved[m]]}")).json() for m in MODES]
        with anyio.fail_after(30):
            for value in [v for mode in MODES for v in waiting[mode]]:
                response = await decide(api, ids[value], "approve")
                assert response.status_code == 200, response.text
            async with anyio.create_task_group() as tg:
                for mode in MODES:
                    tg.start_soon(_reissue_all, f"{base}/mcp", mode, values[mode], runs, again)

    assert sorted(c["id"] for c in listed) == sorted(ids[v] for m in MODES for v in waiting[m])
    assert all(c["principal"] == AGENT for c in listed)
    assert [c["state"] for c in kept] == ["approved"] * len(MODES)
    for value in every:
        assert not runs[value].is_error, runs[value]
        assert text_of(runs[value]) == f"recorded {value}"
        # delivered once: the next identical call is a new pending call, not a second run
        assert pending_meta(again[value])["state"] == "pending"
        assert pending_meta(again[value])["id"] != ids[value]
        assert executions(log, value) == [{"value": value}]


async def _hold_all(url: str, mode: str, values: list[str], ids: dict[str, str]) -> None:
    async with agent_client(url, mode) as client, anyio.create_task_group() as tg:
        for value in values:
            tg.start_soon(_hold, client, value, ids)


async def _hold(client: Client, value: str, ids: dict[str, str]) -> None:
    ids[value] = pending_meta(await client.call_tool(BRIEF, {"value": value}))["id"]


async def _reissue_all(
    url: str,
    mode: str,
    values: list[str],
    runs: dict[str, CallToolResult],
    again: dict[str, CallToolResult],
) -> None:
    async with agent_client(url, mode) as client:
        for value in values:
            runs[value] = await client.call_tool(BRIEF, {"value": value})
        async with anyio.create_task_group() as tg:
            for value in values:
                tg.start_soon(_again, client, value, again)


async def _again(client: Client, value: str, again: dict[str, CallToolResult]) -> None:
    again[value] = await client.call_tool(BRIEF, {"value": value})


async def test_stopping_the_gateway_answers_held_calls_pending_without_a_traceback(
    tmp_path: Path,
) -> None:
    """SIGINT while calls are held open (rule hold 10 s): each caller is answered "pending" at
    once, not cut by the server's shutdown timeout; the calls stay pending for the restart."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = e2e_config(tmp_path, log=tmp_path / "executions.jsonl", port=port)
    stderr = tmp_path / "lockgate.stderr"
    answers: dict[str, CallToolResult] = {}
    values = {mode: marker(f"stop-{mode}") for mode in MODES}

    async def held(mode: str) -> None:
        async with agent_client(f"{base}/mcp", mode) as client:
            answers[mode] = await client.call_tool("recorder__record", {"value": values[mode]})

    async with lockgate_serve(config, base, stderr) as gateway, api_client(base) as api:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                for mode in MODES:
                    tg.start_soon(held, mode)
                while len((await api.get("/api/approvals")).json()["items"]) < len(MODES):
                    await anyio.sleep(0.05)  # polling the other process: its own answer
                gateway.send_signal(signal.SIGINT)
            assert await gateway.wait() == 130  # interrupted, as the CLI says on SIGINT
        ids = {mode: pending_meta(answers[mode])["id"] for mode in MODES}
    async with lockgate_serve(config, base, stderr), api_client(base) as api:
        kept = [(await api.get(f"/api/approvals/{ids[mode]}")).json()["state"] for mode in MODES]

    logged = stderr.read_text(encoding="utf-8")
    assert "Traceback" not in logged
    assert "Exception in ASGI application" not in logged
    assert all(pending_meta(answers[mode])["state"] == "pending" for mode in MODES)
    assert kept == ["pending"] * len(MODES)
