"""The refusal suite's gateway, shared by its modules (see `refusal_support`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from refusal_support import Served, refusal_config, serve


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    async with serve(refusal_config(tmp_path_factory.mktemp("refusals"))) as running:
        yield running
