"""The operator console lists a server in secret mode as a principal without connecting as
them: a principal whose connection is closed is shown the last-known (common) catalogue, with
a note, and no upstream process is started with their secret. Both eras for the agents' calls.

Real parts: the env server over stdio (a process per principal, its secret in its environment),
the gateway under uvicorn, `mcp.Client`, the REST API.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import httpx2
import pytest
from credentials_support import (
    AGENTS,
    SECRETS,
    credentials_config,
    per_principal_pool,
    rest,
    secret_stdio,
    vault_keys,
)
from support import MODES, mcp_http_client, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.context import Principal
from toolsets.upstream.per_principal import principal_key

ALICE, BOB = "agent:alice", "agent:bob"
OPERATOR, OPERATOR_TOKEN = "user:ops", "ops-operator-token"


def _processes_with(variable: str, secret: str) -> set[int]:
    """The live processes with ``variable=secret`` in their environment."""
    wanted, found = f"{variable}={secret}".encode(), set()
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes() if proc.name.isdigit() else b""
        except OSError:  # gone meanwhile, or not ours
            continue
        if wanted in environ.split(b"\0"):
            found.add(int(proc.name))
    return found


@pytest.mark.parametrize("mode", MODES)
async def test_the_console_lists_a_closed_connection_as_last_known_without_opening_it(
    tmp_path: Path, mode: str
) -> None:
    variable = f"CONSOLE_TOKEN_{uuid.uuid4().hex[:8]}"
    agents = [{"id": id, "token": token} for id, token in AGENTS.items()]
    operator = {"id": OPERATOR, "token": OPERATOR_TOKEN, "roles": ["operator"]}
    with vault_keys():
        config = credentials_config(
            tmp_path,
            [secret_stdio("local", variable)],
            auth={"agents": agents, "approvers": [operator]},
        )
        gateway = Gateway.from_config(config)
        async with serve_asgi(build_app(gateway)) as base:
            for who in (ALICE, BOB):
                async with rest(base, who) as api:
                    put = await api.put("/api/connections/local", json={"secret": SECRETS[who]})
                    assert put.status_code == 200, put.text
                async with mcp_http_client(f"{base}/mcp", mode, AGENTS[who]) as client:
                    seen = await client.call_tool("local__whoami", {})
                    assert (seen.structured_content or {})["value"] == SECRETS[who]
            pool, bob = per_principal_pool(gateway), principal_key(Principal(id=BOB))
            pool.drop(bob)  # bob's connection closes (as when idle)
            with anyio.fail_after(30):
                await pool.wait_closed(bob)
            bobs = _processes_with(variable, SECRETS[BOB])  # his old one may still be ending
            alices = _processes_with(variable, SECRETS[ALICE])

            operator_auth = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
            async with httpx2.AsyncClient(base_url=base, headers=operator_auth) as console:
                listed = await console.get("/api/console/catalogue", params={"principal": BOB})
            assert listed.status_code == 200, listed.text

            assert bob not in pool.entries  # no connection opened as bob
            assert _processes_with(variable, SECRETS[BOB]) <= bobs  # nor a process of his
            assert _processes_with(variable, SECRETS[ALICE]) == alices  # alice's as it was
            assert len(alices) == 1
    body = listed.json()
    assert [tool["name"] for tool in body["items"]] == ["local__whoami"]  # the common catalogue
    assert body["note"].startswith("'local': each caller's own connection; shown as last known")
    assert "the console opens no connection as them" in body["note"]
