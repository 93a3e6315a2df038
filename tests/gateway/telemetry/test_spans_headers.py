"""An HTTP upstream gets a call's trace context as the ``traceparent`` (and ``tracestate``) HTTP
header on the request carrying the call, not only in ``params._meta``: the same trace, its
parent lockgate's span for the call to that upstream, through both faces in both eras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gateway_faces import FACES, Face, open_face
from otlp_receiver import OTLPReceiver
from support import write_config
from telemetry_support import traced_http_upstream
from trace_tree_support import call_tree, traced_config


def _parts(traceparent: str) -> tuple[str, str]:
    """The trace id and parent span id of a W3C ``traceparent``."""
    version, trace_id, span_id, flags = traceparent.split("-")
    assert version == "00"
    assert int(flags, 16) & 1  # sampled
    return trace_id, span_id


@pytest.mark.parametrize("face", FACES)
async def test_an_http_upstream_reads_the_calls_trace_in_the_traceparent_header(
    face: Face, tmp_path: Path
) -> None:
    async with OTLPReceiver() as receiver, traced_http_upstream(receiver.endpoint) as url:
        upstream = {"name": "traced", "transport": "http", "url": url}
        config = traced_config(tmp_path, receiver.endpoint, [upstream])
        async with open_face(face, config) as client:
            result = await client.call_tool("traced__carried", {})
            assert not result.is_error, result.content
        root, spans = await call_tree(receiver, "tools/call traced__carried")
    carried: Any = result.structured_content
    header, meta = carried["headers"], carried["meta"]
    ours = next(s for s in spans if s["kind"] == "CLIENT")
    assert ours["name"] == "tools/call carried"
    assert header["traceparent"] == meta["traceparent"]
    assert _parts(header["traceparent"]) == (root["trace_id"], ours["span_id"])
    assert header.get("tracestate") == meta.get("tracestate")


async def test_an_untraced_gateway_sends_an_http_upstream_no_trace_header(
    tmp_path: Path,
) -> None:
    face = Face("http", "auto")
    async with OTLPReceiver() as receiver, traced_http_upstream(receiver.endpoint) as url:
        upstream = {"name": "traced", "transport": "http", "url": url}
        config = write_config(tmp_path, [upstream], startup_wait=30)  # no telemetry: off
        async with open_face(face, config) as client:
            result = await client.call_tool("traced__carried", {})
    carried: Any = result.structured_content
    assert carried == {"meta": {}, "headers": {}}
