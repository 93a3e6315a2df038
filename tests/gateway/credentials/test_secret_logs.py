"""A server reached with each caller's own credentials (one upstream process per principal) still
relays its log messages: to the caller who asked, at the level they asked (2025-11-25:
``logging/setLevel``; 2026-07-28: the per-request level), and to no other caller."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from credentials_support import AGENTS, SECRETS, credentials_config, rest, vault_keys
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from relay_support import RELAY_SERVER
from support import MODES, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets._sdk_compat import create_mcp_http_client

ALICE, BOB = "agent:alice", "agent:bob"
WANTED = [("warning", "chat/chat", "warning: hi"), ("error", "chat/chat", "error: hi")]


class Logs:
    """The log messages one client received."""

    def __init__(self) -> None:
        self.got: list[tuple[str, str | None, object]] = []
        self.arrived = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.got.append((params.level, params.logger, params.data))
        self.arrived.set()
        self.arrived = anyio.Event()

    async def count(self, wanted: int) -> None:
        while len(self.got) < wanted:
            await self.arrived.wait()


@asynccontextmanager
async def client(url: str, mode: str, who: str, logs: Logs, *, asks: bool) -> AsyncIterator[Client]:
    """``who``'s client; when ``asks``, it wants log messages at warning and up."""
    headers = {"Authorization": f"Bearer {AGENTS[who]}"}
    http = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30, read=60))
    level: types.LoggingLevel | None = "warning" if asks and mode != "legacy" else None
    async with http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport,  # type: ignore[arg-type]
            mode=mode,
            read_timeout_seconds=30,
            logging_callback=logs,
            log_level=level,
        ) as opened:
            if asks and mode == "legacy":
                request = types.SetLevelRequest(params=types.SetLevelRequestParams(level="warning"))
                await opened.session.send_request(request, types.EmptyResult)
            yield opened


@pytest.mark.parametrize("mode", MODES)
async def test_each_callers_own_upstream_process_relays_its_logs_to_that_caller(
    tmp_path: Path, mode: str
) -> None:
    server = {
        "name": "chat",
        "transport": "stdio",
        "command": sys.executable,
        "args": [RELAY_SERVER, "--era", "dual"],
        "credentials": {"mode": "secret", "env": "UPSTREAM_TOKEN"},
    }
    alice_logs, bob_logs = Logs(), Logs()
    with vault_keys(), anyio.fail_after(60):
        gateway = Gateway.from_config(credentials_config(tmp_path, [server]))
        async with serve_asgi(build_app(gateway)) as base:
            url = f"{base}/mcp"
            async with (
                client(url, mode, ALICE, alice_logs, asks=True) as alice,
                client(url, mode, BOB, bob_logs, asks=False) as bob,
            ):
                for who in (ALICE, BOB):
                    async with rest(base, who) as api:
                        put = await api.put("/api/connections/chat", json={"secret": SECRETS[who]})
                        assert put.status_code == 200, put.text
                for caller in (alice, bob):
                    result = await caller.call_tool("chat__chat", {"text": "hi"})
                    assert not result.is_error, result
                await alice_logs.count(len(WANTED))
    assert alice_logs.got == WANTED
    assert bob_logs.got == []
