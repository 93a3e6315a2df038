"""The context pack of a held call (``GET /api/approvals/{id}`` → ``context``): what the tool
does and how far to trust its hints, the rule and its condition as written, the arguments in
canonical form with their digest, the caller and the client it says it is, and the session's
recent calls; on every face and era.

Real parts: the echo server over stdio, the gateway under uvicorn (and ``lockgate stdio`` on the
same SQLite store for the stdio face), `mcp.Client` in both eras, the REST API as an approver.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx2
import pytest
from gateway_faces import FACES, Face, open_client
from held_config_support import SECRET_ECHO_POLICY, held_config
from mcp.client.session import DEFAULT_CLIENT_INFO
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app

ALICE = "context-alice-token"


@pytest.mark.parametrize("face", FACES)
async def test_a_held_calls_context_says_what_why_who_and_what_came_before(
    tmp_path: Path, face: Face
) -> None:
    config = held_config(tmp_path, SECRET_ECHO_POLICY, ALICE)
    gateway = Gateway.from_config(config)
    session = {"Lockgate-Session": "context-pack-test"}  # a 2026-07-28 client names its session
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_client(face, config=config, url=f"{base}/mcp", headers=session) as client,
        httpx2.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {ALICE}"}) as api,
    ):
        first = await client.call_tool("echo__echo", {"text": "hello"})
        held = await client.call_tool("echo__echo", {"text": "secret plans", "z": 1})
        pending_id = (held.meta or {})["lockgate/pending"]["id"]
        shown = (await api.get(f"/api/approvals/{pending_id}")).json()

    assert not first.is_error
    context = shown["context"]
    tool = context["tool"]
    assert (tool["name"], tool["description"]) == ("echo__echo", "Echo the text back.")
    assert tool["annotations"] == {"readOnlyHint": True, "destructiveHint": False}
    assert "not verified" in tool["annotations_trust"]
    rule = context["rule"]
    assert rule["id"] == "secrets-need-a-look"
    assert rule["when"] == 'args.text.startsWith("secret")'
    assert rule["where"].endswith("policy.yaml:4")
    assert 'when args.text.startsWith("secret"): echoing a secret' in rule["text"]
    canonical = context["arguments"]["canonical"]
    assert canonical == '{"text":"secret plans","z":1}'
    assert context["arguments"]["sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
    client_facts = context["caller"]["client"]
    assert (client_facts["name"], client_facts["version"]) == (
        DEFAULT_CLIENT_INFO.name,
        DEFAULT_CLIENT_INFO.version,
    )
    assert client_facts["protocol_version"] == face.protocol
    assert client_facts["transport"] == face.transport
    assert context["times"]["requested"].endswith("+00:00")
    if face.transport == "http":  # the stdio gateway is another process: its book is its own
        assert {"tool": "echo__echo", "ok": True} in [
            {k: v for k, v in entry.items() if k != "args_sha256"}
            for entry in context["session"]["recent"]
        ]
    assert "secret plans" not in json.dumps(context["session"])
