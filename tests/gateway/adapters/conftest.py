"""Fixtures of the adapter suite: one running gateway per module, in process and over HTTP.

The gateway serves the stdio echo upstream (``echo__*``), local Python tools (``local__*``,
from ``adapter_tools``) and one external tool (``lookup``). The HTTP face serves the same
gateway object, so a test sees every execution whichever face it used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import adapter_tools
import pytest
from adapter_support import BACKENDS, LOOKUP, OPS, OPS_TOKEN, POLICY, agent_of, token_of
from support import echo_upstream, serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app


@pytest.fixture(scope="module")
def adapter_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    local = {
        "name": "local",
        "transport": "python",
        "functions": [
            "adapter_tools:record",
            "adapter_tools:note",
            "adapter_tools:rendezvous",
        ],
    }
    auth = {
        "agents": [{"id": agent_of(b).id, "token": token_of(b)} for b in BACKENDS],
        "approvers": [{"id": OPS.id, "token": OPS_TOKEN, "roles": ["ops"]}],
    }
    return write_config(
        tmp_path_factory.mktemp("adapters"),
        [echo_upstream("echo"), local],
        policies={"files": [str(POLICY)]},
        approvals={"store": "memory"},
        auth=auth,
        external_tools=[LOOKUP],
    )


@pytest.fixture(scope="module")
async def gateway(adapter_config: Path) -> AsyncIterator[Gateway]:
    async with Gateway.from_config(adapter_config) as gw:
        yield gw


@pytest.fixture(scope="module")
async def gateway_url(gateway: Gateway) -> AsyncIterator[str]:
    """The module's gateway served over HTTP (MCP at /mcp, REST at /api); the base URL."""
    async with serve_asgi(build_app(gateway, manage_gateway=False)) as base:
        yield base


@pytest.fixture(autouse=True)
def _fresh_tools() -> Iterator[None]:
    adapter_tools.reset()
    yield
    adapter_tools.reset()
