"""The relay suite's gateway: one per test module, over relay upstreams of both eras (over
stdio, and a 2025-11-25 one over streamable HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from relay_support import Served, http_upstream, relay_config
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with http_upstream("legacy") as web:
        gateway = Gateway.from_config(relay_config(tmp_path_factory.mktemp("relay"), web))
        async with serve_asgi(build_app(gateway)) as base:
            assert await gateway.wait_ready(), gateway.health()
            yield Served(gateway, f"{base}/mcp")
