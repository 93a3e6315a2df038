"""An upstream instrumented with the OpenTelemetry SDK reports its span under lockgate's: the same
trace, its parent lockgate's span for the call to that upstream, over stdio and HTTP upstreams,
through both faces, in both eras."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from gateway_faces import FACES, Face, open_face
from otlp_receiver import OTLPReceiver, SpanDict
from support import write_config
from telemetry_support import (
    UPSTREAM_SPAN,
    new_traceparent,
    traced_http_upstream,
    traced_upstream,
)

UPSTREAMS = ["stdio", "http"]


def telemetry(endpoint: str) -> dict[str, Any]:
    """Every span exported to ``endpoint``, in batches a tenth of a second apart."""
    return {"endpoint": endpoint, "schedule_delay": 0.1, "sampling": {"sampler": "always_on"}}


def is_ours(span: SpanDict) -> bool:
    return bool(span["resource"].get("service.name") == "lockgate")


def era_of(face: Face) -> str:
    return "legacy" if face.mode == "legacy" else "modern"


@contextlib.asynccontextmanager
async def traced_server(transport: str, endpoint: str, era: str) -> Any:
    """The config entry of a traced upstream speaking ``era`` over ``transport``."""
    if transport == "stdio":
        yield traced_upstream("traced", endpoint, era)
        return
    async with traced_http_upstream(endpoint, era) as url:
        yield {"name": "traced", "transport": "http", "url": url}


async def call_traced(
    face: Face, upstream: str, tmp_path: Path, receiver: OTLPReceiver, meta: dict[str, Any]
) -> SpanDict:
    """Call ``traced__echo`` through ``face``; the upstream's span once exported."""
    async with traced_server(upstream, receiver.endpoint, era_of(face)) as server:
        traced = telemetry(receiver.endpoint)
        config = write_config(
            tmp_path, [server], approvals={"store": "memory"}, telemetry=traced, startup_wait=30
        )
        async with open_face(face, config) as client:
            result = await client.call_tool("traced__echo", {"text": "hi"}, meta=meta or None)
            assert not result.is_error, result.content
            return await receiver.wait_for_span(lambda s: s["name"] == UPSTREAM_SPAN, timeout=30)


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("face", FACES)
async def test_the_upstreams_span_is_a_child_of_lockgates_upstream_call_span(
    face: Face, upstream: str, tmp_path: Path
) -> None:
    async with OTLPReceiver() as receiver:
        theirs = await call_traced(face, upstream, tmp_path, receiver, {})
        ours = await receiver.wait_for_span(lambda s: s["span_id"] == theirs["parent_span_id"])
        root = await receiver.wait_for_span(
            lambda s: s["name"] == "tools/call traced__echo" and is_ours(s)
        )
    assert ours["trace_id"] == theirs["trace_id"] == root["trace_id"]
    assert ours["kind"] == "CLIENT"
    assert ours["name"] == "tools/call echo"
    assert ours["resource"]["service.name"] == "lockgate"
    assert root["kind"] == "SERVER"
    assert theirs["attributes"]["test.carrier"] == "meta"


@pytest.mark.parametrize("face", FACES)
async def test_a_callers_trace_runs_through_lockgate_into_the_upstream(
    face: Face, tmp_path: Path
) -> None:
    traceparent, trace_id, caller_span = new_traceparent()
    async with OTLPReceiver() as receiver:
        meta = {"traceparent": traceparent}
        theirs = await call_traced(face, "stdio", tmp_path, receiver, meta)
        root = await receiver.wait_for_span(
            lambda s: s["kind"] == "SERVER" and s["parent_span_id"] == caller_span
        )
    assert root["trace_id"] == theirs["trace_id"] == trace_id


@pytest.mark.parametrize("face", FACES)
async def test_an_http_upstream_gets_the_same_trace_context_in_the_traceparent_header(
    face: Face, tmp_path: Path
) -> None:
    async with OTLPReceiver() as receiver:
        theirs = await call_traced(face, "http", tmp_path, receiver, {})
    header = theirs["attributes"]["test.header.traceparent"]
    assert header
    assert header == theirs["attributes"]["test.meta.traceparent"]
