"""A caller's trace continues through the gateway: its ``traceparent`` in ``params._meta`` (every
face, both eras) or in the HTTP header becomes the parent of the call's server span; and with
tracing off, the chain holds no traced step at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from gateway_faces import FACES, HTTP_FACES, Face, open_client, open_face, serve_gateway
from otlp_receiver import OTLPReceiver
from support import echo_upstream, write_config
from telemetry_support import new_traceparent
from trace_tree_support import traced_config

from gateway.gateway import Gateway
from toolsets.traced import TracedToolset
from toolsets.wrapper import WrapperToolset

SERVER_SPAN = "tools/call echo__echo"


@pytest.mark.parametrize("face", FACES)
async def test_a_traceparent_in_meta_is_continued_by_the_calls_server_span(
    face: Face, tmp_path: Path
) -> None:
    traceparent, trace_id, span_id = new_traceparent()
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with open_face(face, config) as client:
            await client.call_tool("echo__echo", {"text": "hi"}, meta={"traceparent": traceparent})
        root = await receiver.wait_for_span(lambda s: s["name"] == SERVER_SPAN)
    assert root["trace_id"] == trace_id
    assert root["parent_span_id"] == span_id


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_a_traceparent_header_is_continued_by_the_calls_server_span(
    face: Face, tmp_path: Path
) -> None:
    traceparent, trace_id, span_id = new_traceparent()
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        async with (
            serve_gateway(config) as url,
            open_client(face, config=config, url=url, headers={"traceparent": traceparent}) as c,
        ):
            await c.call_tool("echo__echo", {"text": "hi"})
        root = await receiver.wait_for_span(lambda s: s["name"] == SERVER_SPAN)
    assert root["trace_id"] == trace_id
    assert root["parent_span_id"] == span_id


def _wrappers(toolset: object) -> list[WrapperToolset]:
    found: list[WrapperToolset] = []
    while isinstance(toolset, WrapperToolset):
        found.append(toolset)
        toolset = toolset.wrapped
    return found


def test_with_tracing_off_the_chain_holds_no_traced_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "on").mkdir()
    off = Gateway.from_config(write_config(tmp_path, [echo_upstream()]))
    on = Gateway.from_config(traced_config(tmp_path / "on", "http://127.0.0.1:9"))
    assert off.parts.telemetry is None
    assert not any(isinstance(w, TracedToolset) for w in _wrappers(off.parts.root))
    steps = [w.step for w in _wrappers(on.parts.root) if isinstance(w, TracedToolset)]
    assert steps == ["validation", "policy", "rate_limit", "approval", "upstream"]
