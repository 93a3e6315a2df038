"""Secret mode over stdio: each principal's secret lands in the environment of that principal's
own upstream process only (the env server reports the variable and its pid), in both eras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from credentials_support import (
    AGENTS,
    SECRETS,
    credentials_config,
    every_log_line,
    rest,
    secret_stdio,
    vault_keys,
)
from mcp import Client
from support import MODES, mcp_http_client, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE, BOB = "agent:alice", "agent:bob"


async def _whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("local__whoami", {})
    assert not result.is_error, result
    found: dict[str, Any] = result.structured_content or {}
    return found


@pytest.mark.parametrize("mode", MODES)
async def test_a_stdio_secret_lands_in_its_principals_own_process_only(
    tmp_path: Path, mode: str
) -> None:
    with vault_keys(), every_log_line() as logs:
        config = credentials_config(tmp_path, [secret_stdio("local")])
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base:
            mcp = f"{base}/mcp"
            async with (
                mcp_http_client(mcp, mode, AGENTS[ALICE]) as alice,
                mcp_http_client(mcp, mode, AGENTS[BOB]) as bob,
                rest(base, ALICE) as alice_api,
                rest(base, BOB) as bob_api,
            ):
                for api, who in ((alice_api, ALICE), (bob_api, BOB)):
                    put = await api.put("/api/connections/local", json={"secret": SECRETS[who]})
                    assert put.status_code == 200, put.text
                alice_sees, bob_sees = await _whoami(alice), await _whoami(bob)
                assert alice_sees["value"] == SECRETS[ALICE]
                assert bob_sees["value"] == SECRETS[BOB]
                assert alice_sees["pid"] != bob_sees["pid"]  # a process per principal
                assert (await _whoami(alice))["pid"] == alice_sees["pid"]  # and kept open
    assert not [line for line in logs.lines for s in SECRETS.values() if s in line]
