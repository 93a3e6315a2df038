"""Fixtures of the surface suite: one gateway per module, a client on every face.

The HTTP gateway runs in-process (tests reach its `Gateway` too); a stdio face runs
``lockgate stdio`` on the same config as a subprocess of its own. A module may override
``surface_config`` (its own upstreams, policy, auth); ``served`` and ``watched`` then serve it.

Module scope, not wider: while an async fixture is alive, anyio's pytest plugin keeps its test
runner open and marks the thread as running asyncio, so a later test's ``anyio.run`` fails
("Already running asyncio in this thread"); and ``package`` scope in this directory (no
``__init__.py``) would be the whole session. Module-scoped async fixtures rely on the
session-scoped ``anyio_backend`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from gateway_faces import FACES, Face, open_client
from mcp import Client
from support import write_config
from surface_support import STARTUP_WAIT, Heard, Served, serve_surface, surface_servers


@pytest.fixture(scope="module")
def surface_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Echo upstreams of each era (``dual`` with 120 extra resources, ``old``, ``new``), a
    tools-only server (``bare``) and one that is down (``ghost``); the first request waits
    for every upstream's first connection, however loaded the machine."""
    directory = tmp_path_factory.mktemp("surface")
    return write_config(directory, surface_servers(), startup_wait=STARTUP_WAIT)


@pytest.fixture(scope="module")
async def served(surface_config: Path) -> AsyncIterator[Served]:
    """The module's gateway served over streamable HTTP."""
    async with serve_surface(surface_config) as served:
        yield served


@pytest.fixture(scope="module", params=FACES)
def face(request: pytest.FixtureRequest) -> Face:
    """Each downstream face: HTTP or ``lockgate stdio``, legacy or modern client."""
    face: Face = request.param
    return face


@pytest.fixture(scope="module")
async def watched(
    face: Face, surface_config: Path, served: Served
) -> AsyncIterator[tuple[Client, Heard]]:
    """A client on ``face`` and what it hears, shared by the module's tests."""
    heard = Heard()
    opened = open_client(face, config=surface_config, url=served.url, message_handler=heard)
    async with opened as client:
        yield client, heard
