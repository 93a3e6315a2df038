"""Through a real pydantic-ai agent (the lockgate toolset, a scripted `FunctionModel`): the model
reads a refusal's human sentence (a policy denial, an expired approval), and the host reads its
kind on the failed tool return's ``metadata`` (never sent to the model), in process and over
HTTP in both MCP eras; an upstream failure carries ``lockgate/error`` there instead."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from adapter_support import lines_by_call, scripted, tool_returns
from pydantic_ai import Agent
from refusal_support import Served

from gateway.adapters.pydantic_ai import GatewayToolset

BACKENDS = ["inprocess", "http-legacy", "http-modern"]
CLOSED = "This recorder is closed; do not retry."


@contextlib.asynccontextmanager
async def toolset(served: Served, backend: str) -> AsyncIterator[GatewayToolset]:
    if backend == "inprocess":
        yield GatewayToolset.from_gateway(served.gateway)
        return
    mode = "legacy" if backend == "http-legacy" else "auto"
    async with GatewayToolset.from_url(served.url, mode=mode) as tools:
        yield tools


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_model_reads_the_sentence_and_the_host_reads_the_refusal_kind(
    served: Served, backend: str
) -> None:
    model = scripted(
        ("recorder__record_denied", {"value": "a"}),
        ("recorder__record_expiring", {"value": backend}),
        ("faulty__crash", {}),
    )
    async with toolset(served, backend) as tools:
        with anyio.fail_after(60):
            run = await Agent(model, toolsets=[tools]).run("go")

    said = lines_by_call(run.output)
    assert said["c0"] == f"failed: {CLOSED}"
    assert said["c1"].endswith("expired without a decision; not executed.")
    assert said["c2"].startswith("failed: Server 'faulty'")  # lost, or not back yet
    metadata: dict[str, Any] = {
        r.tool_call_id: r.metadata for r in tool_returns(run.all_messages())
    }
    assert metadata["c0"]["lockgate/refusal"]["kind"] == "denied"
    assert metadata["c0"]["lockgate/refusal"]["rule"] == "recorder-closed"
    assert metadata["c1"]["lockgate/refusal"]["kind"] == "approval_expired"
    assert metadata["c1"]["lockgate/refusal"]["unblock"] == {"action": "reissue"}
    assert "lockgate/refusal" not in metadata["c2"]
    assert metadata["c2"]["lockgate/error"]["kind"] == "upstream_unavailable"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_host_reads_a_rate_limit_as_its_kind_with_when_to_retry(
    served: Served, backend: str
) -> None:
    # (a locked session gate hides its tool from the listing the agent chooses from, so a
    # pydantic-ai agent never calls one: the SDK tests cover that refusal)
    model = scripted(
        ("recorder__record_brief", {"value": "one"}),  # once per session: one of the two
        ("recorder__record_brief", {"value": "two"}),  # is limited, whichever comes second
    )
    async with toolset(served, backend) as tools:
        with anyio.fail_after(60):
            run = await Agent(model, toolsets=[tools]).run("go")

    said = lines_by_call(run.output)
    refusals = {
        r.tool_call_id: (r.metadata or {}).get("lockgate/refusal", {})
        for r in tool_returns(run.all_messages())
    }
    limited = [c for c in ("c0", "c1") if refusals[c]]
    assert len(limited) == 1
    (call,) = limited
    assert (refusals[call]["kind"], refusals[call]["retryAfter"]) == ("rate_limited", 3600)
    assert refusals[call]["unblock"] == {"action": "retry_after"}
    assert said[call].startswith("failed: ")
