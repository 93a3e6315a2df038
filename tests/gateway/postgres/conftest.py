"""Fixtures of the PostgreSQL suite: a fresh schema per module, and two ``lockgate serve``
replicas on it (started once per module; their tests use fresh argument values).

The approvals suites' helpers are reused (the recorder upstream, policy and clients; the
pending-call factory): their folders are put on ``sys.path`` here so `approvals_e2e_support`
and `pending_support` import by name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from pg_e2e_support import Replicas, replica, replica_config
from pg_support import fresh_schema


@pytest.fixture(scope="module")
async def schema() -> AsyncIterator[str]:
    """A fresh schema for the module, dropped after it."""
    async with fresh_schema() as name:
        yield name


@pytest.fixture(scope="module")
async def replicas(
    tmp_path_factory: pytest.TempPathFactory, schema: str
) -> AsyncIterator[Replicas]:
    """Replicas ``a`` and ``b``: two ``lockgate serve`` processes sharing ``schema``."""
    directory = tmp_path_factory.mktemp("replicas")
    config = replica_config(directory, schema)
    async with replica(config, "a") as a, replica(config, "b") as b:
        yield Replicas(a=a, b=b, config=config, log=directory / "executions.jsonl")
