"""Fixtures of the LangGraph suite: a gateway with local tools, in process and over HTTP.

The gateway serves ``local__transfer`` (held for an operator), ``local__ship`` (nested schema,
held, approve or deny only) and the echo upstream. Its pending calls live in SQLite, so a test
can restart it between a graph's interrupt and its resume.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import graph_tools
import pytest
from lg_support import POLICY, graph_config_at
from support import serve_asgi

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
