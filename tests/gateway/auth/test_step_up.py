"""Per-tool scopes are step-up challenges (the MCP authorization spec's step-up flow).

A policy rule's ``scopes`` says which OAuth scopes a caller's token must hold to call the tools
it matches. Over HTTP a token lacking one gets ``403`` with ``WWW-Authenticate: Bearer
error="insufficient_scope", scope="..."`` naming what the call needs and the resource metadata,
in both eras and on both paths (a plain call: the fast path; a call with a ``progressToken``:
the SDK's), so the client asks for a larger token; the listing still shows the tool. Over stdio
the call is a JSON-RPC error naming the scopes. Tokens are real JWTs signed with a key made in
the test; the gateway runs under uvicorn, ``lockgate stdio`` as a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from auth_support import AUDIENCE, ec_key, mint
from events_e2e_support import local_config
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from support import MODES, serve_asgi

from gateway.auth.oauth_metadata import WELL_KNOWN
from gateway.gateway import Gateway
from gateway.http.app import build_app
from policies.engine import PolicyEngine
from toolsets.errors import PolicyError

LEGACY, MODERN = "2025-11-25", "2026-07-28"
ISSUER = "https://steps.lockgate.test"
KEY = ec_key("step-up")
CALL_SCOPE, PAY_SCOPE = "lockgate:call", "payments:write"
POLICY = f"""\
version: 1
defaults: {{effect: allow}}
rules:
  - id: paying-needs-the-payments-scope
    tools: [local__pay]
    scopes: [{PAY_SCOPE}]
    effect: allow
"""
DAY = 24 * 3600
ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])
PATHS = pytest.mark.parametrize("path", ["fast", "sdk"])
ACCEPT = "application/json, text/event-stream"
CLIENT_INFO = {"name": "step-up", "version": "1.0"}


def token(*scopes: str) -> str:
    # Minted at collection: on a busy two-worker run a test may start half an hour later.
    return mint(KEY, ISSUER, lifetime=DAY, scope=" ".join(scopes))


NARROW, WIDE = token(CALL_SCOPE), token(CALL_SCOPE, PAY_SCOPE)


def config(directory: Path) -> Path:
    issuer = {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "key": KEY.pem(),
        "as": ["agent"],
        "require": {"agent": f"scope:{CALL_SCOPE}"},
        "id_prefix": "step:",
    }
    return local_config(directory, POLICY, {"jwt": [issuer]})


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return config(tmp_path_factory.mktemp("step-up"))


@pytest.fixture(scope="module")
async def base(config_path: Path) -> AsyncIterator[str]:
    async with serve_asgi(build_app(Gateway.from_config(config_path))) as url:
        yield url


@dataclass
class Raw:
    """One client of ``/mcp`` over raw HTTP: a handshake-era session, or modern envelopes."""

    http: httpx2.AsyncClient
    url: str
    era: str
    token: str
    session: str | None = None

    def headers(self, method: str) -> dict[str, str]:
        headers = {
            "Accept": ACCEPT,
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.token}",
        }
        if self.era == "modern":
            return headers | {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if self.session is not None:
            headers |= {"MCP-Protocol-Version": LEGACY, "Mcp-Session-Id": self.session}
        return headers

    async def open(self) -> Raw:
        if self.era == "legacy":
            params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT_INFO}
            response = await self.post("initialize", params, id=0)
            assert response.status_code == 200, response.text
            self.session = response.headers["mcp-session-id"]
            body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            sent = self.headers("notifications/initialized")
            assert (await self.http.post(self.url, json=body, headers=sent)).status_code == 202
        return self

    async def post(self, method: str, params: dict[str, Any], *, id: int = 1) -> httpx2.Response:
        if self.era == "modern":
            meta = params.setdefault("_meta", {})
            meta |= {
                PROTOCOL_VERSION_META_KEY: MODERN,
                CLIENT_CAPABILITIES_META_KEY: {},
                CLIENT_INFO_META_KEY: CLIENT_INFO,
            }
        body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
        headers = self.headers(method)
        if method == "tools/call" and self.era == "modern":
            headers["Mcp-Name"] = params["name"]
        return await self.http.post(self.url, json=body, headers=headers)

    async def call(self, name: str, *, path: str) -> httpx2.Response:
        """``tools/call``; ``path="sdk"`` sends a progress token (the SDK's path)."""
        params: dict[str, Any] = {"name": name, "arguments": {"note": "n"}}
        if path == "sdk":
            params["_meta"] = {"progressToken": "p-1"}
        return await self.post("tools/call", params)


@pytest.fixture
async def http() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(10)) as client:
        yield client


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer`` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def answer(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC response a response carries (one JSON body, or an event stream)."""
    if not response.headers["content-type"].startswith("text/event-stream"):
        found: dict[str, Any] = response.json()
        return found
    datas = [line[5:].strip() for line in response.text.splitlines() if line[:5] == "data:"]
    [message] = [m for m in map(json.loads, filter(None, datas)) if "id" in m]
    return dict(message)


@ERAS
@PATHS
async def test_a_call_without_the_tools_scope_is_a_403_step_up_challenge(
    base: str, http: httpx2.AsyncClient, era: str, path: str
) -> None:
    raw = await Raw(http, f"{base}/mcp", era, NARROW).open()

    response = await raw.call("local__pay", path=path)

    assert response.status_code == 403, response.text
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    # What the call needs: the agent scope to reach /mcp at all, and the tool's.
    assert params["scope"] == f"{CALL_SCOPE} {PAY_SCOPE}"
    assert params["resource_metadata"] == f"{base}{WELL_KNOWN}/mcp"
    assert PAY_SCOPE in params["error_description"]
    assert response.json()["error"] == "insufficient_scope"


@ERAS
@PATHS
async def test_a_token_with_the_scope_calls_the_tool(
    base: str, http: httpx2.AsyncClient, era: str, path: str
) -> None:
    raw = await Raw(http, f"{base}/mcp", era, WIDE).open()

    response = await raw.call("local__pay", path=path)

    assert response.status_code == 200, response.text
    result = answer(response)["result"]
    assert not result.get("isError"), result
    assert result["content"][0]["text"] == "n"


@ERAS
async def test_tools_without_scopes_and_the_listing_stay_open_to_the_narrow_token(
    base: str, http: httpx2.AsyncClient, era: str
) -> None:
    raw = await Raw(http, f"{base}/mcp", era, NARROW).open()

    free = await raw.call("local__free", path="fast")
    listed = await raw.post("tools/list", {}, id=2)

    assert free.status_code == 200
    assert answer(free)["result"]["content"][0]["text"] == "n"
    # The tool stays listed: the caller can step up and call it.
    assert "local__pay" in {t["name"] for t in answer(listed)["result"]["tools"]}


async def test_the_mcp_resource_metadata_lists_the_per_tool_scopes(
    base: str, http: httpx2.AsyncClient
) -> None:
    response = await http.get(f"{base}{WELL_KNOWN}/mcp")

    assert response.status_code == 200
    assert response.json()["scopes_supported"] == [CALL_SCOPE, PAY_SCOPE]


def stdio_client(config_path: Path, jwt: str, mode: str) -> Client:
    env = {**os.environ, "LOCKGATE_TOKEN": jwt}
    args = ["-m", "gateway.cli", "stdio", "--config", str(config_path)]
    server = StdioServerParameters(
        command=sys.executable, args=args, env=env, cwd=str(config_path.parent)
    )
    return Client(server, mode=mode, read_timeout_seconds=30)


async def _progress(progress: float, total: float | None, message: str | None) -> None:
    return None


@pytest.mark.parametrize("mode", MODES)
async def test_over_stdio_a_call_without_the_scope_is_a_json_rpc_error_naming_it(
    config_path: Path, mode: str
) -> None:
    async with stdio_client(config_path, NARROW, mode) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError) as plain:
            await client.call_tool("local__pay", {"note": "n"})
        with pytest.raises(MCPError) as progressed:  # the SDK's path
            await client.call_tool("local__pay", {"note": "n"}, progress_callback=_progress)
        allowed = await client.call_tool("local__free", {"note": "n"})

    assert "local__pay" in listed
    for caught in (plain, progressed):
        assert caught.value.error.data == {
            "error": "insufficient_scope",
            "scope": PAY_SCOPE,
            "tool": "local__pay",
        }
        assert PAY_SCOPE in caught.value.error.message
    assert not allowed.is_error


@pytest.mark.parametrize("mode", MODES)
async def test_over_stdio_a_token_with_the_scope_calls_the_tool(
    config_path: Path, mode: str
) -> None:
    async with stdio_client(config_path, WIDE, mode) as client:
        result = await client.call_tool("local__pay", {"note": "n"})

    assert not result.is_error


def test_a_rule_with_scopes_and_a_condition_is_a_located_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "version: 1\nrules:\n  - id: r\n    tools: [x]\n    when: 'true'\n"
        "    scopes: [files:write]\n    effect: allow\n",
        encoding="utf-8",
    )

    with pytest.raises(PolicyError) as caught:
        PolicyEngine.load([path])

    assert "scopes" in str(caught.value)
    assert "when/unless" in str(caught.value)
