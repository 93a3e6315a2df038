"""Resources, prompts and completions of a server reached with each caller's own credentials
(secret mode, one upstream process per principal): each caller lists, reads and gets over their
own connection and sees only their own (``pool_server.py``'s ``notes://mine`` and ``greet``
depend on the process's secret); a caller not connected is refused ``not_connected`` naming how
to connect; subscriptions are refused; the resource policy applies as to any server. Over HTTP
and ``lockgate stdio``, in both MCP eras."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from credentials_support import (
    AGENTS,
    audit_bytes,
    credentials_config,
    rest,
    vault_keys,
)
from gateway_faces import FACES, Face
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from support import MODES, mcp_http_client, serve_asgi
from surface_support import subscribe

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE, BOB = "agent:alice", "agent:bob"
POOL_SERVER = str(Path(__file__).resolve().parent / "pool_server.py")
OWN = {ALICE: "plain-alice-5e1", BOB: "plain-bob-90c"}
"""Each agent's secret: what their own process's notes and greeting name."""
NOTES, GREET = "lockgate://pool/notes://mine", "pool__greet"
REFUSED = -32003
CONNECT = "lockgate connections set pool"
POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: bobs-notes-denied
    resources: ["notes://mine"]
    principals: ["agent:bob"]
    effect: deny
    message: Bob reads his notes elsewhere.
  - id: bob-greets-nobody
    prompts: [pool__greet]
    principals: ["agent:bob"]
    effect: hide
"""


UNREACHED = "http://127.0.0.1:9"
"""Where the upstream and its authorization server would be: never asked in these refusals."""
EXCHANGE = {"issuer": UNREACHED, "client": {"id": "gw", "secret": "env:LOCKGATE_TEST_GW_SECRET"}}


def pool_server() -> dict[str, Any]:
    return {
        "name": "pool",
        "transport": "stdio",
        "command": sys.executable,
        "args": [POOL_SERVER, "POOL_SECRET"],
        "credentials": {"mode": "secret", "env": "POOL_SECRET"},
    }


@contextlib.asynccontextmanager
async def served(tmp_path: Path, **extra: Any) -> AsyncIterator[tuple[Path, str]]:
    """The gateway's config and base URL, served over HTTP (its REST API sets secrets)."""
    with vault_keys():
        config = credentials_config(tmp_path, [pool_server()], **extra)
        async with serve_asgi(build_app(Gateway.from_config(config))) as base:
            yield config, base


@contextlib.asynccontextmanager
async def agent(face: Face, config: Path, base: str, who: str) -> AsyncIterator[Client]:
    """``who``'s client on ``face``: HTTP with their token, or ``lockgate stdio`` on the same
    config (and vault) with it in ``$LOCKGATE_TOKEN``."""
    if face.transport == "http":
        async with mcp_http_client(f"{base}/mcp", face.mode, AGENTS[who]) as client:
            yield client
        return
    env = {**os.environ, "LOCKGATE_TOKEN": AGENTS[who]}
    args = ["-m", "gateway.cli", "stdio", "-c", str(config)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=config.parent)
    async with Client(params, mode=face.mode, read_timeout_seconds=60) as client:
        yield client


async def connect(base: str, who: str) -> None:
    async with rest(base, who) as api:
        put = await api.put("/api/connections/pool", json={"secret": OWN[who]})
    assert put.status_code == 200, put.text


async def notes(client: Client) -> str:
    contents = (await client.read_resource(NOTES)).contents
    assert [c.uri for c in contents] == [NOTES]
    assert isinstance(contents[0], types.TextResourceContents)
    return contents[0].text


async def greeting(client: Client) -> str:
    messages = (await client.get_prompt(GREET)).messages
    assert isinstance(messages[0].content, types.TextContent)
    return messages[0].content.text


def greet_ref() -> types.PromptReference:
    return types.PromptReference(type="ref/prompt", name=GREET)


def _refused_not_connected(error: types.ErrorData) -> None:
    assert (error.code, CONNECT in error.message) == (REFUSED, True), error
    refusal = (error.data or {})["lockgate/refusal"]
    assert refusal["kind"] == "not_connected"
    assert refusal["unblock"] == {"action": "connect", "url": "/api/connections/pool"}


@pytest.mark.parametrize("face", FACES)
async def test_each_caller_reads_and_gets_their_own_over_their_own_connection(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(120):
        async with served(tmp_path) as (config, base):
            await connect(base, ALICE)
            await connect(base, BOB)
            async with (
                agent(face, config, base, ALICE) as alice,
                agent(face, config, base, BOB) as bob,
            ):
                for client in (alice, bob):
                    listed = [r.uri for r in (await client.list_resources()).resources]
                    prompts = [p.name for p in (await client.list_prompts()).prompts]
                    templates = (await client.list_resource_templates()).resource_templates
                    assert (listed, prompts, templates) == ([NOTES], [GREET], [])
                read = {who: await notes(c) for c, who in ((alice, ALICE), (bob, BOB))}
                greeted = {who: await greeting(c) for c, who in ((bob, BOB), (alice, ALICE))}
                completed = await alice.complete(greet_ref(), {"name": "who", "value": "a"})
    assert read == {ALICE: f"notes of {OWN[ALICE]}", BOB: f"notes of {OWN[BOB]}"}
    assert greeted == {ALICE: f"Hello {OWN[ALICE]}", BOB: f"Hello {OWN[BOB]}"}
    assert completed.completion.values == []  # the server declares no completions
    assert not [s for s in OWN.values() if s.encode() in audit_bytes(config)]  # nor what they read


@pytest.mark.parametrize("face", FACES)
async def test_a_caller_not_connected_is_refused_naming_how_to_connect(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(120):
        async with served(tmp_path) as (config, base):
            await connect(base, ALICE)
            async with agent(face, config, base, BOB) as bob:
                listed = [r.uri for r in (await bob.list_resources()).resources]
                prompts = [p.name for p in (await bob.list_prompts()).prompts]
                refused = []
                for request in (
                    bob.read_resource(NOTES),
                    bob.get_prompt(GREET),
                    bob.complete(greet_ref(), {"name": "who", "value": "a"}),
                ):
                    with pytest.raises(MCPError) as raised:
                        await request
                    refused.append(raised.value.error)
    assert (listed, prompts) == ([], [])  # left out, as a server that is down
    for error in refused:
        _refused_not_connected(error)


@pytest.mark.parametrize("face", FACES)
async def test_the_resource_policy_applies_to_each_callers_own_resources(
    tmp_path: Path, face: Face
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with anyio.fail_after(120):
        async with served(tmp_path, policies={"files": [str(policy)]}) as (config, base):
            await connect(base, ALICE)
            await connect(base, BOB)
            async with (
                agent(face, config, base, ALICE) as alice,
                agent(face, config, base, BOB) as bob,
            ):
                alices = (await notes(alice), await greeting(alice))
                bobs_prompts = [p.name for p in (await bob.list_prompts()).prompts]
                with pytest.raises(MCPError) as denied:
                    await bob.read_resource(NOTES)
                with pytest.raises(MCPError) as hidden:
                    await bob.get_prompt(GREET)
    assert alices == (f"notes of {OWN[ALICE]}", f"Hello {OWN[ALICE]}")
    assert bobs_prompts == []
    assert (denied.value.error.code, denied.value.error.message) == (
        REFUSED,
        "Bob reads his notes elsewhere.",
    )
    assert hidden.value.error.code == types.INVALID_PARAMS


@pytest.mark.parametrize("face", FACES)
async def test_subscribing_to_a_callers_own_resource_is_refused_naming_why(
    tmp_path: Path, face: Face
) -> None:
    with anyio.fail_after(120):
        async with served(tmp_path) as (config, base):
            await connect(base, ALICE)
            async with agent(face, config, base, ALICE) as alice:
                if face.mode == "legacy":
                    with pytest.raises(MCPError) as raised:
                        await subscribe(alice, NOTES)
                    refused: object = raised.value.error
                else:  # a listen stream acknowledges what it holds: not this
                    async with alice.listen(resource_subscriptions=[NOTES]) as listened:
                        refused = listened.honored.resource_subscriptions
                still = await notes(alice)
    if isinstance(refused, types.ErrorData):
        assert refused.code == REFUSED
        assert "each caller's own credentials" in refused.message
        assert NOTES in refused.message
    else:
        assert not refused
    assert still == f"notes of {OWN[ALICE]}"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("credentials", "told"),
    [
        pytest.param(
            {"mode": "oauth"},
            (
                "run `lockgate connections connect web`",
                {"action": "connect", "url": "/api/connections/web/connect"},
            ),
            id="oauth-account-not-connected",
        ),
        pytest.param(
            {"mode": "token_exchange", "exchange": EXCHANGE},
            ("ask with a JWT from the identity provider", {"action": "none"}),
            id="token-exchange-static-token",
        ),
    ],
)
async def test_each_credentials_mode_tells_a_caller_it_cannot_reach_how_to(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    credentials: dict[str, Any],
    told: tuple[str, dict[str, str]],
) -> None:
    monkeypatch.setenv("LOCKGATE_TEST_GW_SECRET", "gateway-client-secret")
    server = {"name": "web", "transport": "http", "url": f"{UNREACHED}/mcp"}
    server["credentials"] = credentials
    with vault_keys(), anyio.fail_after(60):
        config = credentials_config(tmp_path, [server])
        async with (
            serve_asgi(build_app(Gateway.from_config(config))) as base,
            mcp_http_client(f"{base}/mcp", mode, AGENTS[ALICE]) as alice,
        ):
            with pytest.raises(MCPError) as raised:
                await alice.read_resource("lockgate://web/notes://mine")
    error = raised.value.error
    refusal = (error.data or {})["lockgate/refusal"]
    assert (error.code, refusal["kind"], refusal["unblock"]) == (REFUSED, "not_connected", told[1])
    assert told[0] in error.message
