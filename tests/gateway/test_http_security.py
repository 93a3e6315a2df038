"""DNS-rebinding protection on ``/mcp``: Host and Origin are checked for clients of both eras."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
from gateway_faces import ECHO_TOOLS, HTTP_FACES, Face
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from support import echo_upstream, write_config

ALLOWED_ORIGIN = "https://console.example.com"
ALLOWED_HOST = "gateway.example.com"


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    listen = {"allowed_origins": [ALLOWED_ORIGIN], "allowed_hosts": [ALLOWED_HOST]}
    return write_config(tmp_path_factory.mktemp("security"), [echo_upstream("echo")], listen=listen)


@pytest.fixture(params=HTTP_FACES)
def face(request: pytest.FixtureRequest) -> Face:
    face: Face = request.param
    return face


class Recorded:
    """HTTP statuses the gateway answered, in order."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    async def __call__(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)


async def _list_tools(url: str, face: Face, headers: dict[str, str], recorded: Recorded) -> int:
    async with (
        httpx2.AsyncClient(headers=headers, event_hooks={"response": [recorded]}) as http,
        Client(streamable_http_client(url, http_client=http), mode=face.mode) as client,
    ):
        assert client.protocol_version == face.protocol
        return len((await client.list_tools()).tools)


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-origin"),
        pytest.param({"Origin": "http://localhost:{port}"}, id="localhost-origin"),
        pytest.param({"Origin": "http://127.0.0.1:{port}"}, id="loopback-ip-origin"),
        pytest.param({"Origin": ALLOWED_ORIGIN}, id="configured-origin"),
        pytest.param({"Host": ALLOWED_HOST}, id="configured-host"),
        pytest.param({"Host": "localhost:{port}"}, id="localhost-host"),
    ],
)
async def test_a_loopback_or_configured_host_and_origin_is_served(
    gateway_url: str, face: Face, headers: dict[str, str]
) -> None:
    port = str(urlsplit(gateway_url).port)
    recorded = Recorded()
    sent = {name: value.replace("{port}", port) for name, value in headers.items()}

    assert await _list_tools(gateway_url, face, sent, recorded) == len(ECHO_TOOLS)
    assert all(200 <= status < 300 for status in recorded.statuses)


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        pytest.param({"Host": "evil.example.net"}, 421, id="foreign-host"),
        pytest.param({"Host": "evil.example.net:80"}, 421, id="foreign-host-with-port"),
        pytest.param({"Origin": "http://evil.example.net"}, 403, id="foreign-origin"),
        pytest.param({"Origin": "https://localhost.evil.example.net"}, 403, id="lookalike-origin"),
        pytest.param({"Origin": "null"}, 403, id="opaque-origin"),
    ],
)
async def test_a_foreign_host_or_origin_is_refused(
    gateway_url: str, face: Face, headers: dict[str, str], status: int
) -> None:
    recorded = Recorded()

    with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
        await _list_tools(gateway_url, face, headers, recorded)

    assert recorded.statuses[0] == status


async def test_a_refused_request_never_reaches_the_mcp_server(gateway_url: str) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "rebinding", "version": "1"},
        },
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Host": "evil.example.net",
    }
    async with httpx2.AsyncClient() as http:
        response = await http.post(gateway_url, json=initialize, headers=headers)

    assert response.status_code == 421
    assert "mcp-session-id" not in response.headers
    assert response.text == "Invalid Host header"
