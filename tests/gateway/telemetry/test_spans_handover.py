"""A ``tools/call`` the fast path hands over to the SDK path (the policy puts it to a 2025-11-25
caller, whose question needs the session's back-channel) has one server span, not two: the SDK
path adopts the fast path's span (marked with the hand-over), and the call's upstream span is
under it. A 2026-07-28 caller is asked with an ``InputRequired`` result and answers in a second
request: one span per request, no hand-over."""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from approvals_e2e_support import AGENT_TOKEN, agent_client, answering, e2e_config
from gateway_faces import CLI
from mcp import Client, StdioServerParameters
from otlp_receiver import OTLPReceiver
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.telemetry.requests import HANDED_OVER

SERVER_SPAN = "tools/call recorder__record_caller"


def traced_e2e_config(directory: Path, endpoint: str) -> Path:
    """The approvals suite's gateway (the caller-confirmed rule), tracing to ``endpoint``."""
    config = e2e_config(directory, log=directory / "executions.jsonl")
    body = yaml.safe_load(config.read_text(encoding="utf-8"))
    body["telemetry"] = {"endpoint": endpoint, "schedule_delay": 0.05}
    body["startup_wait"] = 30
    config.write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    return config


@contextlib.asynccontextmanager
async def caller(transport: str, mode: str, config: Path) -> AsyncIterator[Client]:
    """The agent, answering the gateway's question with an approval."""
    callback: Any = answering("accept", {"decision": "approve"})
    if transport == "http":
        gateway = Gateway.from_config(config)
        async with (
            serve_asgi(build_app(gateway)) as base,
            agent_client(f"{base}/mcp", mode, elicitation_callback=callback) as client,
        ):
            yield client
        return
    env = {**os.environ, "LOCKGATE_TOKEN": AGENT_TOKEN}
    argv = [*CLI[1:], "stdio", "--config", str(config)]
    target = StdioServerParameters(command=sys.executable, args=argv, env=env)
    async with Client(target, mode=mode, elicitation_callback=callback) as client:
        yield client


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_call_handed_from_the_fast_path_to_the_sdk_path_has_one_server_span(
    transport: str, mode: str, tmp_path: Path
) -> None:
    value = f"handed-{uuid.uuid4().hex}"
    async with OTLPReceiver() as receiver:
        config = traced_e2e_config(tmp_path, receiver.endpoint)
        async with caller(transport, mode, config) as client:
            result = await client.call_tool("recorder__record_caller", {"value": value})
            assert not result.is_error, result.content
        upstream = await receiver.wait_for_span(lambda s: s["name"] == "tools/call record_caller")
        root = await receiver.wait_for_span(
            lambda s: s["name"] == SERVER_SPAN and s["trace_id"] == upstream["trace_id"]
        )
    servers = [s for s in receiver.spans if s["name"] == SERVER_SPAN]
    assert len(servers) == (1 if mode == "legacy" else 2), servers  # one per request
    handed = [e for e in root["events"] if e["name"] == HANDED_OVER]
    assert len(handed) == (1 if mode == "legacy" else 0)
    assert root["attributes"]["lockgate.decision.effect"] == "ask"
    assert root["status"]["code"] != "ERROR"
    assert value.encode() not in receiver.payload
