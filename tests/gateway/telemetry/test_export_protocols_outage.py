"""A collector that cannot be reached, over OTLP/gRPC as over OTLP/HTTP, is warned about once by
lockgate, naming its endpoint, and calls go on being served while every export fails."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from gateway_faces import Face, open_client, serve_gateway
from mcp import Client
from otlp_grpc_receiver import OTLPGrpcReceiver
from support import echo_upstream, free_port, write_config

HTTP = Face("http", "auto")
SERVED_AFTER = 5
"""Calls made after the warning, each of which must still be answered."""


def _config(directory: Path, endpoint: str, protocol: str) -> Path:
    """A gateway tracing every call to ``endpoint`` over ``protocol``; an export is given up
    after 2 s of retries."""
    telemetry = {
        "endpoint": endpoint,
        "protocol": protocol,
        "service_name": "lockgate-test",
        "schedule_delay": 0.05,
        "export_timeout": 2,
    }
    path: Path = write_config(directory, [echo_upstream()], telemetry=telemetry, startup_wait=30)
    return path


async def _echo(client: Client) -> None:
    result = await client.call_tool("echo__echo", {"text": "hi"})
    assert not result.is_error, result.content


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every warning about exporting (lockgate's, and any the SDK would let through)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and (r.name.startswith(("gateway.telemetry", "opentelemetry")) or "export" in r.message)
    ]


async def _serve_until_warned(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """Calls (each answered) until the outage is warned about, then `SERVED_AFTER` more; the
    exporter retries with backoff up to its timeout first, hence the headroom."""
    with anyio.fail_after(120):
        while not _warnings(caplog):
            await _echo(client)
    for _ in range(SERVED_AFTER):
        await _echo(client)


def _check_one_warning(caplog: pytest.LogCaptureFixture, endpoint: str) -> None:
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert urlsplit(endpoint).netloc in warnings[0]
    assert "calls are not affected" in warnings[0]


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
async def test_an_unreachable_collector_is_warned_about_once_by_endpoint_and_calls_go_on(
    protocol: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    config = _config(tmp_path, endpoint, protocol)
    with caplog.at_level(logging.DEBUG):
        async with (
            serve_gateway(config) as url,
            open_client(HTTP, config=config, url=url) as client,
        ):
            await _serve_until_warned(client, caplog)
    _check_one_warning(caplog, endpoint)


async def test_a_grpc_collector_that_stops_is_warned_about_once_and_calls_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with OTLPGrpcReceiver() as receiver:
        config = _config(tmp_path, receiver.endpoint, "grpc")
        with caplog.at_level(logging.DEBUG):
            async with (
                serve_gateway(config) as url,
                open_client(HTTP, config=config, url=url) as client,
            ):
                await _echo(client)
                root = await receiver.wait_for_span(
                    lambda s: s["name"] == "tools/call echo__echo", timeout=60
                )
                assert _warnings(caplog) == []
                await receiver.stop()
                await _serve_until_warned(client, caplog)
    assert root["kind"] == "SERVER"
    _check_one_warning(caplog, receiver.endpoint)
