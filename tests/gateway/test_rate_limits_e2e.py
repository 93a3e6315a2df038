"""Rate limits end to end: a call over its rule's limit is the same error result on every face
and in both MCP eras (the rule, the limit, when to retry, ``_meta["lockgate/retry_after"]``),
its upstream never sees it, and it is a ``tool.rate_limited`` event and a metric."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from gateway_faces import FACES, Face, open_client, open_face
from mcp import Client
from paths import HARNESS
from support import serve_asgi, write_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

RECORDER = HARNESS / "recorder_server.py"
POLICY = Path(__file__).parent / "fixtures" / "rate_limits.yaml"
REFUSED = (
    "Rate limit exceeded: rule 'record-once-per-session' allows 1/h per session; "
    "retry after 3600 s."
)
LIMIT = {"rule_id": "record-once-per-session", "rate": "1/h", "per": ["session"], "burst": 1}
REFUSAL = {
    "kind": "rate_limited",
    "message": REFUSED,
    "rule": "record-once-per-session",
    "retryAfter": 3600,
    "unblock": {"action": "retry_after"},
    "details": {"limit": LIMIT},
}
"""``lockgate/refusal`` (docs/refusals.md); the recorder's tools declare no outputSchema, so it is
the ``structuredContent`` too."""


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the recorder upstream logs each call it executes."""
    return tmp_path_factory.mktemp("recorder") / "executions.jsonl"


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory, log: Path) -> Path:
    recorder = {
        "name": "recorder",
        "transport": "stdio",
        "command": sys.executable,
        "args": [str(RECORDER), "--log", str(log)],
    }
    policies = {"files": [str(POLICY)]}
    directory = tmp_path_factory.mktemp("gateway")
    return write_config(directory, [recorder], policies=policies, approvals={"store": "memory"})


@pytest.fixture(scope="module", params=FACES)
async def client(request: pytest.FixtureRequest, gateway_config: Path) -> AsyncIterator[Client]:
    """A client on each face, with a gateway of its own (so each face has fresh counters)."""
    async with open_face(request.param, gateway_config) as client:
        yield client


def executed(log: Path, value: str) -> int:
    """How many times the upstream executed a call with ``value``."""
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return sum(json.loads(line)["arguments"].get("value") == value for line in lines)


def wire(result: Any) -> dict[str, Any]:
    """A ``CallToolResult`` as the client received it, in MCP wire form, less what the protocol
    adds (``resultType``, and in 2026-07-28 ``_meta`` keys of its own): lockgate's part."""
    data: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    data.pop("resultType", None)
    data["_meta"] = {k: v for k, v in data["_meta"].items() if k.startswith("lockgate/")}
    return data


async def test_a_call_over_the_limit_is_the_same_error_result_on_every_face(
    client: Client, log: Path
) -> None:
    value = uuid.uuid4().hex
    first = await client.call_tool("recorder__record", {"value": value})
    refused = await client.call_tool("recorder__record", {"value": value})
    assert not first.is_error
    assert wire(refused) == {
        "content": [{"type": "text", "text": REFUSED}],
        "structuredContent": {"lockgate/refusal": REFUSAL},
        "isError": True,
        "_meta": {
            "lockgate/retry_after": 3600,
            "lockgate/rate_limit": LIMIT,
            "lockgate/refusal": REFUSAL,
        },
    }
    assert executed(log, value) == 1  # the upstream never saw the refused call


async def test_a_refused_call_is_a_rate_limited_event_and_a_metric(
    gateway_config: Path, log: Path
) -> None:
    gateway = Gateway.from_config(gateway_config)
    http = httpx2.AsyncClient(timeout=30)
    async with serve_asgi(build_app(gateway)) as base, http:
        face, url = Face("http", "auto"), f"{base}/mcp"
        async with (
            open_client(face, config=gateway_config, url=url) as client,
            gateway.events.subscribe(["tool.rate_limited"]) as events,
        ):
            value = uuid.uuid4().hex
            for _ in range(2):
                await client.call_tool("recorder__record_brief", {"value": value})
            with anyio.fail_after(30):
                event = await anext(aiter(events))
        metrics = (await http.get(f"{base}/metrics")).text
    data = event.data
    assert (data["tool"], data["args"], data["retry_after"]) == (
        "recorder__record_brief",
        {"value": value},
        3600,
    )
    assert data["decision"] == {"effect": "allow", "rule_id": "brief-once-per-session"}
    assert data["limit"]["rule_id"] == "brief-once-per-session"
    assert executed(log, value) == 1
    expected = 'lockgate_rate_limited_calls_total{mode="enforce",rule="brief-once-per-session"} 1.0'
    assert expected in metrics.splitlines()
