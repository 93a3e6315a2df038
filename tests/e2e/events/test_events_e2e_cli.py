"""The event and audit commands against a real ``lockgate serve`` subprocess.

``lockgate events tail --json -n 2`` prints the two events of one MCP call and exits; after the
server stops, ``lockgate audit verify`` accepts the log its traffic wrote (and the chain breaks
once an entry is changed).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import httpx2
from events_e2e_support import (
    AGENT,
    CLI,
    ECHO,
    SUBSCRIBER_TOKEN,
    audit_db,
    e2e_config,
    http_client,
)
from support import free_port

from gateway.audit.verify import verify
from gateway.events.redact import MASK


async def subscribers(http: httpx2.AsyncClient) -> int:
    """``lockgate_event_subscribers`` of the running gateway."""
    for line in (await http.get("/metrics")).text.splitlines():
        if line.startswith("lockgate_event_subscribers "):
            return int(float(line.split()[1]))
    raise AssertionError("no lockgate_event_subscribers in /metrics")


async def between_polls() -> None:
    """The pause between two polls of another process: polling is its only readiness signal."""
    await anyio.sleep(0.05)


@contextlib.asynccontextmanager
async def lockgate_serve(config: Path, port: int) -> AsyncIterator[str]:
    """``lockgate serve`` as a subprocess; yields its base URL once ``/healthz`` answers 200.

    Leaving the block sends SIGTERM and waits for the graceful exit (uvicorn re-raises the
    signal once it has shut down, so the status is -SIGTERM), which must log no traceback.
    """
    process = await anyio.open_process(
        [*CLI, "serve", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(base_url=base, timeout=5) as http:
            with anyio.fail_after(60):  # a process start: slow on a loaded machine
                while True:
                    assert process.returncode is None, "lockgate serve exited early"
                    with contextlib.suppress(httpx2.TransportError):
                        if (await http.get("/healthz")).status_code == 200:
                            break
                    await between_polls()
        yield base
    finally:
        if process.returncode is None:
            process.terminate()
        with anyio.CancelScope(shield=True), anyio.fail_after(15):
            code = await process.wait()
            assert process.stderr is not None
            errors = b"".join([chunk async for chunk in process.stderr]).decode()
        await process.aclose()
    assert code in (0, -signal.SIGTERM), errors
    assert "Traceback" not in errors


async def test_events_tail_prints_the_two_events_of_one_call_and_audit_verify_accepts_the_log(
    tmp_path: Path,
) -> None:
    port = free_port()
    config = e2e_config(tmp_path, port=port)
    with anyio.fail_after(40):
        async with (
            lockgate_serve(config, port) as base,
            httpx2.AsyncClient(base_url=base, timeout=5) as http,
        ):
            # Every upstream up first: one coming up later would announce tools.changed.
            while (await http.get("/healthz")).json()["status"] != "ok":
                await between_polls()
            before = await subscribers(http)
            tail = [*CLI, "events", "tail", "--url", base, "--token", SUBSCRIBER_TOKEN]
            async with await anyio.open_process([*tail, "--json", "-n", "2"]) as process:
                while await subscribers(http) == before:  # tail has not subscribed yet
                    await between_polls()
                async with http_client(f"{base}/mcp", "auto") as client:
                    await client.call_tool("vault__store", {"text": "t", "secret": "s", "pin": "p"})
                    await client.call_tool(ECHO, {"text": "not printed: -n 2"})
                assert process.stdout is not None
                out = b"".join([chunk async for chunk in process.stdout]).decode()
                code = await process.wait()
    assert code == 0
    printed = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in printed] == ["tool.call", "tool.result"]
    call, answer = (e["data"] for e in printed)
    assert call["call_id"] == answer["call_id"]
    assert call["tool"] == answer["tool"] == "vault__store"
    assert call["principal"] == AGENT
    assert call["args"] == {"text": "t", "secret": MASK, "pin": MASK}
    assert all(e["specversion"] == "1.0" for e in printed)

    db = str(audit_db(config))
    verified = await anyio.run_process([*CLI, "audit", "verify", "--db", db], check=False)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.decode().startswith("ok: 4 entries")

    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE audit SET body = replace(body, 'vault__store', 'vault__other')")
    tampered = verify(db)
    assert (tampered.ok, tampered.first_bad_seq) == (False, 1)
