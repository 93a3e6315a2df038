"""A quarantine recorded by one process is seen by a gateway already serving on the same store
(SQLite file or PostgreSQL schema), without a restart: it stops listing the tool and refuses it
within about a second, and serves it again once an approver accepts the change elsewhere.

Real parts: the echo server over streamable HTTP in the legacy era (one upstream both gateways
share; its ``rug_pull`` tells only the session that called it, so the serving gateway is not
told by the upstream), ``lockgate tools`` as the second process, a second gateway under uvicorn
with ``lockgate pins accept`` on its REST API, the SQLite file or a fresh PostgreSQL schema.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import echo_over, lockgate, running
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pg_support import fresh_schema, pg_storage
from support import serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.errors import ToolQuarantined
from toolsets.tooldef import ToolDef

WEATHER = "echo__weather"
ALICE = "alice-token"
BOUND = 15.0
"""Seconds the serving gateway may take to follow the store: the design bound is about one
second (SQLite is polled every half second); the rest is headroom for a loaded machine."""


@contextlib.asynccontextmanager
async def _store(kind: str, tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    """The config sections that put every store in one SQLite file or a fresh schema."""
    if kind == "sqlite":
        yield {"approvals": {"store": "sqlite", "path": str(tmp_path / "pending.db")}}
    else:
        async with fresh_schema() as schema:
            yield {"storage": pg_storage(schema)}


def _config(tmp_path: Path, url: str, store: dict[str, Any]) -> Path:
    auth = {"approvers": [{"id": "user:alice", "token": ALICE, "roles": ["security"]}]}
    server = {"name": "echo", "transport": "http", "url": url}
    return write_config(
        tmp_path,
        [server],
        auth=auth,
        pins={"approvers": ["role:security"]},
        startup_wait=60,  # the upstream's first connection, on a loaded machine
        **store,
    )


async def _rug_pull(url: str) -> None:
    """Change the upstream's ``weather`` tool, telling only this client's session."""
    async with Client(streamable_http_client(url), mode="legacy") as client:
        await client.call_tool("rug_pull", {"part": "description"})


async def _until(gateway: Gateway, holds: Callable[[dict[str, ToolDef]], bool]) -> None:
    """Return once the gateway's catalogue satisfies ``holds``, re-checked each time it says
    its tools changed; fail after `BOUND` seconds."""
    signal = [anyio.Event()]

    async def changed(_source: str) -> None:
        signal[0].set()

    gateway.on_tools_changed(changed)
    with anyio.fail_after(BOUND):
        while True:
            signal[0] = anyio.Event()
            if holds(await gateway.tools()):
                return
            await signal[0].wait()


def _cli(*args: str) -> str:
    done = lockgate(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_quarantine_recorded_by_another_process_is_followed_live(
    tmp_path: Path, kind: str
) -> None:
    argv, port, url = echo_over("http", era="legacy")
    async with (
        running([(argv, port)]),
        _store(kind, tmp_path) as store,
        Gateway.from_config(config := _config(tmp_path, url, store)) as serving,
    ):
        assert WEATHER in await serving.tools()  # pinned on first use
        await _rug_pull(url)
        assert WEATHER in await serving.tools()  # the upstream told nobody here

        listed = await anyio.to_thread.run_sync(_cli, "tools", "--config", str(config))
        names = [line.split()[0] for line in listed.splitlines() if line.strip()]
        assert "echo__echo" in names
        assert WEATHER not in names  # the second process quarantined the change

        await _until(serving, lambda tools: WEATHER not in tools)
        with pytest.raises(ToolQuarantined, match="waits for review"):
            await serving.call_tool(WEATHER, {"city": "Oslo"})
        record = await serving.pins.get(WEATHER)
        assert record.changed_pin is not None

        second = Gateway.from_config(config)
        async with serve_asgi(build_app(second)) as base:
            accept = ["pins", "accept", WEATHER, "--pin", record.changed_pin]
            await anyio.to_thread.run_sync(_cli, *accept, "--url", base, "--token", ALICE)
            await _until(serving, lambda tools: WEATHER in tools)
        assert "your location is sent" in (await serving.tools())[WEATHER].description
        served = await serving.call_tool(WEATHER, {"city": "Oslo"})
        assert not served.is_error
