"""Fixtures of the gateway suite: one gateway per module, clients on every face.

A module changes the upstreams it tests against by overriding ``gateway_config``. Module-scoped
async fixtures rely on the session-scoped ``anyio_backend`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gateway_faces import FACES, Face, open_client, serve_gateway
from mcp import Client
from support import echo_upstream, write_config


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three stdio echo upstreams: dual-era ``dual``, legacy-only ``old``, modern-only ``new``."""
    servers = [
        echo_upstream("dual"),
        echo_upstream("old", era="legacy"),
        echo_upstream("new", era="modern"),
    ]
    return write_config(tmp_path_factory.mktemp("gateway"), servers)


@pytest.fixture(scope="module")
async def gateway_url(gateway_config: Path) -> AsyncIterator[str]:
    """The module's gateway served over streamable HTTP by uvicorn; the /mcp URL."""
    async with serve_gateway(gateway_config) as url:
        yield url


@pytest.fixture(scope="module", params=FACES)
def face(request: pytest.FixtureRequest) -> Face:
    """Each downstream face: HTTP or ``lockgate stdio``, legacy or modern client."""
    face: Face = request.param
    return face


@pytest.fixture(scope="module")
async def client(face: Face, gateway_config: Path, gateway_url: str) -> AsyncIterator[Client]:
    """A client on ``face``, shared by the module's tests.

    HTTP clients of both eras share the module's HTTP gateway (one at a time); a stdio client
    runs ``lockgate stdio`` with the same config as a subprocess of its own.
    """
    async with open_client(face, config=gateway_config, url=gateway_url) as client:
        yield client
