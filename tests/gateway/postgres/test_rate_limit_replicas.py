"""A rate limit holds across two ``lockgate serve`` replicas sharing PostgreSQL: one counter per
key, whichever replica a call lands on."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import yaml
from approvals_e2e_support import marker
from pg_e2e_support import BUDGET_TOOL, HERE, Replicas, replica, replica_config, session_client

RATE_POLICY = HERE / "fixtures" / "rate_limit.yaml"


@pytest.fixture(scope="module")
async def replicas(
    tmp_path_factory: pytest.TempPathFactory, schema: str
) -> AsyncIterator[Replicas]:
    """Replicas ``a`` and ``b`` on ``schema``, with ``fixtures/rate_limit.yaml`` layered on."""
    directory = tmp_path_factory.mktemp("limited")
    config = replica_config(directory, schema)
    body = yaml.safe_load(config.read_text(encoding="utf-8"))
    body["policies"]["files"].append(str(RATE_POLICY))
    config.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    async with replica(config, "a") as a, replica(config, "b") as b:
        yield Replicas(a=a, b=b, config=config, log=directory / "executions.jsonl")


async def test_a_session_limit_holds_across_both_replicas(replicas: Replicas) -> None:
    session, values = f"s-{uuid.uuid4().hex}", [marker("limited") for _ in range(4)]
    results = []
    for index, value in enumerate(values):
        side = replicas.a if index % 2 == 0 else replicas.b
        async with session_client(side.mcp_url, "auto", session) as client:
            results.append(await client.call_tool(BUDGET_TOOL, {"value": value}))
    assert [result.is_error for result in results] == [False, False, True, True]
    refused = results[3]
    assert refused.meta is not None
    assert refused.meta["lockgate/rate_limit"]["rule_id"] == "two-per-session"
    assert 0 < refused.meta["lockgate/retry_after"] <= 1800
    assert [len(replicas.executions(value)) for value in values] == [1, 1, 0, 0]


async def test_another_session_has_a_counter_of_its_own(replicas: Replicas) -> None:
    async with session_client(replicas.b.mcp_url, "auto", f"s-{uuid.uuid4().hex}") as client:
        fresh = await client.call_tool(BUDGET_TOOL, {"value": marker("fresh")})
    assert not fresh.is_error
