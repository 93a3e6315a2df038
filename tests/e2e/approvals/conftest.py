"""Fixtures of the approvals end-to-end suite: one gateway per module, served over HTTP.

The gateway is the real one (`Gateway.from_config` + `build_app` under uvicorn) in front of the
recorder upstream over stdio, with the suite's policy and a SQLite pending-call store. Tests use
fresh argument values (`marker`), so calls held by one test never answer another's.
Module-scoped async fixtures rely on the session-scoped ``anyio_backend`` of ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from approvals_e2e_support import Rig, served_rig
from decisions_e2e_support import APPROVERS, DECISIONS_POLICY


@pytest.fixture(scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    """The module's gateway under uvicorn on 127.0.0.1, and where its upstream logs executions."""
    async with served_rig(tmp_path_factory.mktemp("approvals-e2e")) as rig:
        yield rig


@pytest.fixture(scope="module")
async def decisions_rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    """Like `rig`, with the grants/stages policy, twenty security approvers, a CTO, an on-call
    approver, and the audit log beside the pending store."""
    directory = tmp_path_factory.mktemp("decisions-e2e")
    options = {"policy": DECISIONS_POLICY, "approvers": APPROVERS, "audit": True}
    async with served_rig(directory, **options) as rig:
        yield rig
