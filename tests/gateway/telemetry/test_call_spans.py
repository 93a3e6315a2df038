"""One ``tools/call`` through each face of a traced gateway: the server span, the chain's step
spans under it, the client span of the upstream call, their attributes, and no argument or
result value in anything exported."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from gateway_faces import FACES, HTTP_FACES, Face, open_client, open_face, text_of
from otlp_receiver import OTLPReceiver, SpanDict
from support import path_counts, serve_asgi
from trace_tree_support import CHAIN_STEPS, call_tree, chain_below, traced_config

from gateway.gateway import Gateway
from gateway.http.app import build_app

SERVER_SPAN = "tools/call echo__echo"


def _check_tree(root: SpanDict, spans: list[SpanDict], face: Face) -> None:
    attributes = root["attributes"]
    assert root["kind"] == "SERVER"
    assert root["parent_span_id"] == ""
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo__echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["mcp.protocol.version"] == face.protocol
    assert attributes["network.transport"] == ("tcp" if face.transport == "http" else "pipe")
    assert attributes["jsonrpc.request.id"] != ""
    assert attributes["lockgate.decision.effect"] == "allow"
    assert "error.type" not in attributes
    assert chain_below(spans, root) == [*CHAIN_STEPS, "tools/call echo"]
    upstream = next(s for s in spans if s["kind"] == "CLIENT")
    assert upstream["attributes"]["lockgate.server"] == "echo"
    assert upstream["attributes"]["gen_ai.tool.name"] == "echo"
    assert root["resource"]["service.name"] == "lockgate-test"


@pytest.mark.parametrize("face", FACES)
async def test_a_call_on_each_face_exports_its_span_tree_with_mcp_attributes(
    face: Face, tmp_path: Path
) -> None:
    secret_value = f"argument-{uuid.uuid4().hex}"
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            result = await client.call_tool("echo__echo", {"text": secret_value})
            assert secret_value in text_of(result)
        root, spans = await call_tree(receiver, SERVER_SPAN)
    _check_tree(root, spans, face)
    assert secret_value.encode() not in receiver.payload


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_call_the_sdk_path_answers_exports_the_same_span_tree(
    face: Face, tmp_path: Path
) -> None:
    secret_value = f"argument-{uuid.uuid4().hex}"
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with OTLPReceiver() as receiver:
        gateway = Gateway.from_config(traced_config(tmp_path, receiver.endpoint))
        async with serve_asgi(build_app(gateway)) as base:
            url = f"{base}/mcp"
            async with open_client(face, config=Path(), url=url) as client:
                # A progress token takes the call to the SDK's handler, not the fast path.
                before = path_counts(gateway.parts.metrics, "http")
                arguments: dict[str, Any] = {"text": secret_value}
                result = await client.call_tool(
                    "echo__echo", arguments, progress_callback=on_progress
                )
                after = path_counts(gateway.parts.metrics, "http")
                assert after["sdk"] > before["sdk"]
            assert secret_value in text_of(result)
        root, spans = await call_tree(receiver, SERVER_SPAN)
    _check_tree(root, spans, face)
    assert secret_value.encode() not in receiver.payload


async def test_an_error_result_marks_the_server_span_with_its_error_type(tmp_path: Path) -> None:
    face = Face("http", "auto")
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            result = await client.call_tool("echo__fail", {})
            assert result.is_error
        root = await receiver.wait_for_span(lambda s: s["name"] == "tools/call echo__fail")
    assert root["attributes"]["error.type"] == "tool_error"
    assert root["status"]["code"] == "ERROR"


LIMITED = """\
version: 1
rules:
  - id: echo-per-caller
    tools: ["echo__*"]
    effect: allow
    limit: {rate: 600/min, per: principal}
"""


@pytest.mark.parametrize("face", HTTP_FACES[:1])
async def test_the_rate_limit_step_has_a_span_when_it_counts_the_call(
    face: Face, tmp_path: Path
) -> None:
    (tmp_path / "policy.yaml").write_text(LIMITED, encoding="utf-8")
    async with OTLPReceiver() as receiver:
        policies = {"files": [str(tmp_path / "policy.yaml")]}
        config = traced_config(tmp_path, receiver.endpoint, policies=policies)
        async with open_face(face, config) as client:
            result = await client.call_tool("echo__echo", {"text": "hello"})
            assert not result.is_error
        root, spans = await call_tree(receiver, SERVER_SPAN)

    assert chain_below(spans, root) == [*CHAIN_STEPS, "lockgate.rate_limit", "tools/call echo"]
    assert root["attributes"]["lockgate.rule"] == "echo-per-caller"
