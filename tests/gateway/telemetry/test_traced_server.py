"""The traced test upstream continues the trace context its caller sends, over stdio and HTTP, in
both eras: the ground the upstream-joins tests stand on."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from otlp_receiver import OTLPReceiver
from support import MODES
from telemetry_support import (
    TRACED_SERVER,
    UPSTREAM_SPAN,
    new_traceparent,
    traced_http_upstream,
)

from toolsets._sdk_compat import create_mcp_http_client


@contextlib.asynccontextmanager
async def traced_client(
    transport: str, endpoint: str, mode: str, headers: dict[str, str]
) -> AsyncIterator[Client]:
    """An `mcp.Client` straight on the traced server (``headers`` only over HTTP)."""
    if transport == "stdio":
        args = [TRACED_SERVER, "--endpoint", endpoint]
        params = StdioServerParameters(command=sys.executable, args=args)
        async with Client(params, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            yield client
        return
    async with (
        traced_http_upstream(endpoint) as url,
        create_mcp_http_client(headers=headers) as http,
    ):
        transport_ = streamable_http_client(url, http_client=http)
        async with Client(transport_, mode=mode, read_timeout_seconds=30) as client:  # type: ignore[arg-type]
            yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_the_traced_upstream_reports_its_span_under_the_traceparent_in_meta(
    transport: str, mode: str
) -> None:
    traceparent, trace_id, span_id = new_traceparent()
    async with OTLPReceiver() as receiver:
        async with traced_client(transport, receiver.endpoint, mode, {}) as client:
            result = await client.call_tool(
                "echo", {"text": "hi"}, meta={"traceparent": traceparent}
            )
        assert not result.is_error
        span = await receiver.wait_for_span(lambda s: s["name"] == UPSTREAM_SPAN)
    assert span["trace_id"] == trace_id
    assert span["parent_span_id"] == span_id
    assert span["attributes"]["test.carrier"] == "meta"
    assert span["resource"]["service.name"] == "traced-upstream"


@pytest.mark.parametrize("mode", MODES)
async def test_over_http_the_traced_upstream_continues_the_traceparent_header(mode: str) -> None:
    traceparent, trace_id, span_id = new_traceparent()
    async with OTLPReceiver() as receiver:
        headers = {"traceparent": traceparent}
        async with traced_client("http", receiver.endpoint, mode, headers) as client:
            await client.call_tool("echo", {"text": "hi"})
        span = await receiver.wait_for_span(lambda s: s["name"] == UPSTREAM_SPAN)
    assert (span["trace_id"], span["parent_span_id"]) == (trace_id, span_id)
    assert span["attributes"]["test.carrier"] == "header"
    assert span["attributes"]["test.header.traceparent"] == traceparent


@pytest.mark.parametrize("mode", MODES)
async def test_without_a_traceparent_the_traced_upstream_starts_its_own_trace(mode: str) -> None:
    async with OTLPReceiver() as receiver:
        async with traced_client("stdio", receiver.endpoint, mode, {}) as client:
            await client.call_tool("echo", {"text": "hi"})
        span = await receiver.wait_for_span(lambda s: s["name"] == UPSTREAM_SPAN)
    assert span["parent_span_id"] == ""
    assert span["attributes"]["test.carrier"] == "none"
