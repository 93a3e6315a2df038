"""Fixtures of the LangGraph suite: a gateway with local tools, in process and over HTTP.

The gateway serves ``local__transfer`` (held for an operator), ``local__ship`` (nested schema,
held, approve or deny only) and the echo upstream. Its pending calls live in SQLite, so a test
can restart it between a graph's interrupt and its resume.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import graph_tools
import pytest
from lg_support import (
    AGENT_TOKENS,
    BACKENDS,
    OPS,
    OPS_TOKEN,
    POLICY,
    Toolkits,
    agent_of,
    graph_config_at,
)
from support import serve_asgi

from gateway.adapters.langchain import GatewayToolkit
from gateway.gateway import Gateway
from gateway.http.app import build_app


@pytest.fixture
def graph_config(tmp_path: Path) -> Path:
    return graph_config_at(tmp_path, POLICY)


@pytest.fixture
async def gateway(graph_config: Path) -> AsyncIterator[Gateway]:
    async with Gateway.from_config(graph_config) as gw:
        yield gw


@pytest.fixture
async def gateway_url(gateway: Gateway) -> AsyncIterator[str]:
    """The test's gateway served over HTTP (MCP at /mcp, REST at /api); the base URL."""
    async with serve_asgi(build_app(gateway, manage_gateway=False)) as base:
        yield base


@pytest.fixture(autouse=True)
def _fresh_tools() -> Iterator[None]:
    graph_tools.reset()
    yield
    graph_tools.reset()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def toolkit(gateway: Gateway, gateway_url: str, backend: str) -> Toolkits:
    """Opens the gateway's toolkit on ``backend``, deciding as the operator (or as the agent
    with ``approver=False``)."""

    @contextlib.asynccontextmanager
    async def open_toolkit(*, approver: bool = True) -> AsyncIterator[GatewayToolkit]:
        if backend == "inprocess":
            kit = GatewayToolkit.from_gateway(
                gateway, principal=agent_of(backend), approver=OPS if approver else None
            )
        else:
            kit = GatewayToolkit.from_url(
                gateway_url,
                token=AGENT_TOKENS[backend],
                approver_token=OPS_TOKEN if approver else None,
                mode="legacy" if backend == "http-legacy" else "auto",
            )
        async with kit:
            yield kit

    return open_toolkit
