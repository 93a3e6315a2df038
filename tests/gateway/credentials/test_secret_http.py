"""Secret mode over HTTP: two agents register their own secrets for one HTTP upstream (the echo
server, whose ``whoami`` reports the Authorization header it received) and each reaches it as
themselves, over their own connection, in both MCP eras; a call before connecting and after a
revoke is refused ``not_connected``; no secret reaches a log line, an event or the audit log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from credentials_support import (
    AGENTS,
    APPROVER,
    SECRETS,
    audit_bytes,
    credentials_config,
    every_log_line,
    rest,
    secret_http,
    vault_keys,
)
from gateway_faces import echo_over, running
from mcp import Client
from support import MODES, mcp_http_client, serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE, BOB = "agent:alice", "agent:bob"


@pytest.fixture(scope="module")
async def upstream() -> AsyncIterator[str]:
    argv, port, url = echo_over("http", name="web")
    async with running([(argv, port)]):
        yield url


async def _whoami(client: Client) -> Any:
    return await client.call_tool("web__whoami", {})


def _authorization(result: Any) -> str:
    assert not result.is_error, result
    return str(result.structured_content["authorization"])


def _refusal(result: Any) -> dict[str, Any]:
    assert result.is_error
    refusal: dict[str, Any] = result.meta["lockgate/refusal"]
    return refusal


CONNECTION_FIELDS = {"id", "server", "principal", "tenant", "created_at", "updated_at"}


async def _scenario(base: str, mode: str) -> list[str]:
    """Alice connects, Bob is refused then connects, each is seen as themselves, Alice
    revokes; the REST answers (pages) it read."""
    mcp = f"{base}/mcp"
    async with (
        mcp_http_client(mcp, mode, AGENTS[ALICE]) as alice,
        mcp_http_client(mcp, mode, AGENTS[BOB]) as bob,
        rest(base, ALICE) as alice_api,
        rest(base, BOB) as bob_api,
        rest(base, APPROVER) as approver_api,
    ):
        put = await alice_api.put("/api/connections/web", json={"secret": SECRETS[ALICE]})
        assert put.status_code == 200
        assert set(put.json()) == CONNECTION_FIELDS
        assert _authorization(await _whoami(alice)) == f"Bearer {SECRETS[ALICE]}"

        refused = _refusal(await _whoami(bob))  # bob has not connected yet
        assert refused["kind"] == "not_connected"
        assert refused["unblock"]["action"] == "connect"  # a single-use link (test_connect_*)
        assert "/connect/" in refused["unblock"]["url"]
        assert "lockgate connections set web" in refused["message"]

        await bob_api.put("/api/connections/web", json={"secret": SECRETS[BOB]})
        assert _authorization(await _whoami(bob)) == f"Bearer {SECRETS[BOB]}"
        assert _authorization(await _whoami(alice)) == f"Bearer {SECRETS[ALICE]}"

        mine = await alice_api.get("/api/connections")
        assert [(c["server"], c["principal"]) for c in mine.json()["items"]] == [("web", ALICE)]
        everyone = await approver_api.get("/api/connections/all")
        assert {c["principal"] for c in everyone.json()["items"]} == {ALICE, BOB}
        assert (await bob_api.get("/api/connections/all")).status_code == 403

        gone = await alice_api.delete("/api/connections/web")
        assert gone.json()["revoked"] is True
        assert _refusal(await _whoami(alice))["kind"] == "not_connected"
        assert _authorization(await _whoami(bob)) == f"Bearer {SECRETS[BOB]}"
        return [put.text, mine.text, everyone.text, gone.text]


@pytest.mark.parametrize("mode", MODES)
async def test_each_agent_reaches_the_http_upstream_with_its_own_secret_and_never_the_others(
    tmp_path: Path, upstream: str, mode: str
) -> None:
    with vault_keys(), every_log_line() as logs:
        config = credentials_config(tmp_path, [secret_http("web", upstream)])
        gateway = Gateway.from_config(config)
        bus = gateway.parts.events.bus
        async with (
            serve_asgi(build_app(gateway)) as base,
            bus.subscribe(["*"], buffer=10_000) as events,
        ):
            pages = await _scenario(base, mode)
            published = events.ready(10_000)
    kinds = [e.type for e in published if e.type in {"credential.connected", "credential.revoked"}]
    assert kinds == ["credential.connected", "credential.connected", "credential.revoked"]
    written = [str(e.to_cloudevent()) for e in published]
    for secret in SECRETS.values():
        assert not [line for line in logs.lines if secret in line]
        assert not [event for event in written if secret in event]
        assert secret.encode() not in audit_bytes(config)
        assert not [page for page in pages if secret in page]
    assert b"credential.revoked" in audit_bytes(config)  # the audit log was read, not empty
