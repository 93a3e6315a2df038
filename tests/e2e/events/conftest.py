"""Fixtures of the events end-to-end suite."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from events_e2e_support import Served, e2e_config, served


@pytest.fixture(scope="session")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """One served gateway shared by tests that only read events they caused themselves.

    Tests that count everything a gateway published (or read its whole audit log) start their
    own instead.
    """
    async with served(e2e_config(tmp_path_factory.mktemp("shared"))) as rig:
        yield rig
