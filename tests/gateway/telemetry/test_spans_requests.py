"""A server span per MCP request on every face, not only ``tools/call``: listings, resource
reads, prompts and the handshake, named per the OpenTelemetry MCP conventions (``"{method}
{target}"`` where the request names a prompt, else the method; a resource URI is an attribute).
With tracing off, no span maker is even installed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from gateway_faces import FACES, Face, open_face
from otlp_receiver import OTLPReceiver, SpanDict
from support import echo_upstream, write_config
from trace_tree_support import traced_config

from gateway.gateway import Gateway
from gateway.mcp.server import build_server

PROMPT = "echo__summarize"


def _ours(receiver: OTLPReceiver) -> list[SpanDict]:
    return [s for s in receiver.spans if s["kind"] == "SERVER" and s["scope"] == "lockgate"]


@pytest.mark.parametrize("face", FACES)
async def test_every_request_of_a_session_gets_a_server_span_named_per_the_mcp_conventions(
    face: Face, tmp_path: Path
) -> None:
    style = f"style-{uuid.uuid4().hex}"
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            await client.list_tools(cache_mode="bypass")
            resources = (await client.list_resources(cache_mode="bypass")).resources
            uri = str(resources[0].uri)
            await client.read_resource(uri)
            await client.list_prompts(cache_mode="bypass")
            await client.get_prompt(PROMPT, {"note": "welcome", "style": style})
        await receiver.wait_for_span(lambda s: s["name"] == f"prompts/get {PROMPT}")
    spans = {s["name"]: s for s in _ours(receiver)}
    expected = {"tools/list", "resources/list", "resources/read", "prompts/list"}
    assert expected | {f"prompts/get {PROMPT}"} <= spans.keys(), sorted(spans)
    if face.mode == "legacy":
        assert "initialize" in spans
    for name in expected:
        attributes = spans[name]["attributes"]
        assert attributes["mcp.method.name"] == name
        assert attributes["mcp.protocol.version"] == face.protocol
        assert attributes["network.transport"] == ("tcp" if face.transport == "http" else "pipe")
        assert attributes["jsonrpc.request.id"] != ""
    assert spans["resources/read"]["attributes"]["mcp.resource.uri"] == uri
    assert spans[f"prompts/get {PROMPT}"]["attributes"]["gen_ai.prompt.name"] == PROMPT
    assert style.encode() not in receiver.payload  # a prompt argument's value


@pytest.mark.parametrize("face", FACES)
async def test_a_listing_continues_the_callers_trace(face: Face, tmp_path: Path) -> None:
    trace_id, caller = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    meta: Any = {"traceparent": f"00-{trace_id}-{caller}-01"}
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            await client.list_resources(meta=meta, cache_mode="bypass")
        span = await receiver.wait_for_span(lambda s: s["name"] == "resources/list")
    assert (span["trace_id"], span["parent_span_id"]) == (trace_id, caller)


async def test_with_tracing_off_no_span_maker_is_installed(tmp_path: Path) -> None:
    gateway = Gateway.from_config(write_config(tmp_path, [echo_upstream()]))
    assert gateway.parts.telemetry is None
    for transport in ("http", "stdio"):
        server = build_server(gateway, transport=transport)
        assert [type(m).__name__ for m in server.middleware if "Span" in type(m).__name__] == []
