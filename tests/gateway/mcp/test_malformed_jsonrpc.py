"""Malformed JSON-RPC is refused with ``-32600`` (Invalid Request) on every face and in both
eras, never taken for a notification: a request whose ``id`` is an object, an array, a boolean
or null gets an error, not ``202`` or silence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from gateway_faces import LEGACY, MODERN
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

BAD_IDS = [
    pytest.param({"a": 1}, id="object"),
    pytest.param([1], id="array"),
    pytest.param(True, id="boolean"),
    pytest.param(None, id="null"),
    pytest.param(1.5, id="fraction"),
]
ERAS = pytest.mark.parametrize("era", [LEGACY, MODERN])
CLIENT = {"name": "malformed-probe", "version": "1"}


def _request(era: str, request_id: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo__echo", "arguments": {"text": "hi"}}
    if era == MODERN:
        params["_meta"] = {
            PROTOCOL_VERSION_META_KEY: MODERN,
            CLIENT_CAPABILITIES_META_KEY: {},
            CLIENT_INFO_META_KEY: CLIENT,
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _headers(era: str) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    headers["MCP-Protocol-Version"] = era
    if era == MODERN:
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "echo__echo"}
    return headers


@ERAS
@pytest.mark.parametrize("request_id", BAD_IDS)
async def test_a_request_with_an_invalid_id_is_refused_over_http(
    gateway_url: str, era: str, request_id: Any
) -> None:
    headers = _headers(era)
    async with httpx2.AsyncClient() as http:
        if era == LEGACY:
            headers["Mcp-Session-Id"] = await _open_session(http, gateway_url)
        response = await http.post(
            gateway_url, content=json.dumps(_request(era, request_id)), headers=headers
        )

    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == -32600
    assert body["id"] is None


async def _open_session(http: httpx2.AsyncClient, url: str) -> str:
    """A 2025-11-25 session, opened and initialized with raw requests."""
    headers = _headers(LEGACY)
    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    opened = await http.post(url, content=json.dumps(message), headers=headers)
    session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers["Mcp-Session-Id"] = session
    done = await http.post(url, content=json.dumps(initialized), headers=headers)
    assert done.status_code == 202
    return session


@ERAS
def test_a_request_with_an_invalid_id_is_refused_over_stdio(gateway_config: Path, era: str) -> None:
    lines = [_request(era, {"a": 1}), _request(era, [2]), _request(era, True)]
    if era == LEGACY:
        init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}
        lines = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *lines,
        ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "stdio", "-c", str(gateway_config)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    answers = [json.loads(line) for line in done.stdout.splitlines()]
    refused = [a for a in answers if "error" in a and a["error"]["code"] == -32600]
    assert len(refused) == 3, done.stdout
    assert all(a["id"] is None and "id" in a["error"]["message"] for a in refused)
