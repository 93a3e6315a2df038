"""Fixtures of the approvals end-to-end suite: one gateway per module, served over HTTP.

The gateway is the real one (`Gateway.from_config` + `build_app` under uvicorn) in front of the
recorder upstream over stdio, with the suite's policy and a SQLite pending-call store. Tests use
fresh argument values (`marker`), so calls held by one test never answer another's.
Module-scoped async fixtures rely on the session-scoped ``anyio_backend`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from approvals_e2e_support import Rig, e2e_config
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http_app import build_app


@pytest.fixture(scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    """The module's gateway under uvicorn on 127.0.0.1, and where its upstream logs executions."""
    directory = tmp_path_factory.mktemp("approvals-e2e")
    log = directory / "executions.jsonl"
    gateway = Gateway.from_config(e2e_config(directory, log=log))
    async with serve_asgi(build_app(gateway)) as base:
        yield Rig(base=base, log=log, gateway=gateway)
