"""A collector outage is warned about once per outage, by lockgate, naming the endpoint and
saying calls are unaffected; when exports work again it says so, and the next outage is warned
about once more. The OpenTelemetry exporter's own lines are kept at debug."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from gateway_faces import Face, open_client, serve_gateway
from mcp import Client
from otlp_receiver import OTLPReceiver
from trace_tree_support import traced_config

HTTP = Face("http", "auto")


async def _echo(client: Client) -> None:
    result = await client.call_tool("echo__echo", {"text": "hi"})
    assert not result.is_error, result.content


def _ours(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "gateway.telemetry" and r.levelno == level
    ]


async def _exports(client: Client, receiver: OTLPReceiver, count: int) -> None:
    """Calls until ``count`` more export requests reached the collector."""
    wanted = receiver.requests + count
    while receiver.requests < wanted:
        before = receiver.requests  # counted before the call: its export may come before the wait
        await _echo(client)
        # the exporter backs off between retries while the collector refuses: real headroom
        await receiver.wait_for_requests(before + 1, timeout=60)


async def test_each_outage_is_warned_about_once_and_its_end_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with OTLPReceiver() as receiver:
        config = traced_config(tmp_path, receiver.endpoint)
        with caplog.at_level(logging.DEBUG):
            async with (
                serve_gateway(config) as url,
                open_client(HTTP, config=config, url=url) as client,
            ):
                await _exports(client, receiver, 1)
                receiver.status = 500  # down: every export refused
                await _exports(client, receiver, 3)
                first = _ours(caplog, logging.WARNING)
                receiver.status = 200  # back
                await receiver.wait_for_span(lambda s: True, timeout=60)
                await _exports(client, receiver, 2)
                back = _ours(caplog, logging.INFO)
                receiver.status = 503  # down again
                await _exports(client, receiver, 3)
    warnings = _ours(caplog, logging.WARNING)
    host = receiver.endpoint.removeprefix("http://")
    assert len(first) == 1, first
    assert host in first[0]
    assert "calls are not affected" in first[0]
    again = f"exporting traces to {receiver.endpoint}/v1/traces again"
    assert [m for m in back if "again" in m] == [again]
    assert len(warnings) == 2, warnings
    sdk = [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert all(r.levelno == logging.DEBUG for r in sdk), [r.getMessage() for r in sdk]
