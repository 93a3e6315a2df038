"""A collector that is down, slow, hanging or failing never slows a call, never makes the export
queue grow past its bound, and is warned about once, not per call or per batch."""

from __future__ import annotations

import contextlib
import logging
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gateway_faces import Face, open_client, serve_gateway
from mcp import Client
from otlp_receiver import OTLPReceiver
from support import echo_upstream, free_port, write_config

HTTP = Face("http", "legacy")
CALLS = 40
ROUNDS = 3


def gateway_config(directory: Path, **telemetry: Any) -> Path:
    """An echo gateway; with ``telemetry`` keys, tracing every call to their endpoint."""
    directory.mkdir()
    sections: dict[str, Any] = {"approvals": {"store": "memory"}, "startup_wait": 30}
    if telemetry:
        sections["telemetry"] = {"sampling": {"sampler": "always_on"}, **telemetry}
    return write_config(directory, [echo_upstream()], **sections)


@contextlib.asynccontextmanager
async def client_of(config: Path) -> AsyncIterator[Client]:
    """A client on the HTTP face of a gateway of its own (closed, and flushed, on leaving)."""
    async with serve_gateway(config) as url, open_client(HTTP, config=config, url=url) as client:
        yield client


async def echo(client: Client, text: str = "hi") -> None:
    result = await client.call_tool("echo__echo", {"text": text})
    assert not result.is_error, result.content


async def p50(client: Client) -> float:
    """Median seconds of `CALLS` echo calls one after the other."""
    took = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await echo(client)
        took.append(time.perf_counter() - started)
    return statistics.median(took)


@pytest.mark.serial
@pytest.mark.parametrize("collector", ["down", "slow"])
async def test_calls_take_what_they_take_with_tracing_off_when_the_collector_is_down_or_slow(
    collector: str, tmp_path: Path
) -> None:
    async with OTLPReceiver() as receiver:
        receiver.delay = 5  # slow: every export waits 5 s for its answer
        endpoint = receiver.endpoint if collector == "slow" else f"http://127.0.0.1:{free_port()}"
        off = gateway_config(tmp_path / "off")
        on = gateway_config(tmp_path / "on", endpoint=endpoint, schedule_delay=0.05)
        timings: dict[str, list[float]] = {"off": [], "on": []}
        async with client_of(off) as plain, client_of(on) as traced:
            for client in (plain, traced):
                await p50(client)  # warm-up
            for _ in range(ROUNDS):
                timings["off"].append(await p50(plain))
                timings["on"].append(await p50(traced))
            if collector == "slow":
                await receiver.wait_for_requests(1)  # the exports did reach it, and hung
    off_p50, on_p50 = statistics.median(timings["off"]), statistics.median(timings["on"])
    assert on_p50 <= off_p50 * 1.5 + 0.002, timings


async def test_the_export_queue_stays_bounded_while_the_collector_hangs(tmp_path: Path) -> None:
    queue, batch = 16, 8
    async with OTLPReceiver() as receiver:
        receiver.delay = 120  # every export hangs until the exporter gives up
        config = gateway_config(
            tmp_path / "gw",
            endpoint=receiver.endpoint,
            schedule_delay=0.05,
            max_queue_size=queue,
            max_export_batch_size=batch,
            export_timeout=2,
        )
        async with client_of(config) as client:
            await echo(client)
            await receiver.wait_for_requests(1)
            for index in range(100):  # some 400 spans and more: 25 queues' worth
                await echo(client, f"call {index}")
            receiver.delay = 0  # the collector recovers: what the queue held is exported
        received = len(receiver.spans)  # the gateway is closed: its queue was flushed
    assert 0 < received <= queue + batch  # the queue, and the batch in flight retried


async def test_a_failing_collector_is_warned_about_once_not_per_call_or_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with OTLPReceiver() as receiver:
        receiver.status = 500  # refuses every export at once (not a status worth retrying)
        config = gateway_config(tmp_path / "gw", endpoint=receiver.endpoint, schedule_delay=0.05)
        with caplog.at_level(logging.WARNING):
            async with client_of(config) as client:
                for batches in range(1, 5):  # four refused exports at least
                    await echo(client)
                    await receiver.wait_for_requests(batches)
    about_export = [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING
        and ("telemetry" in r.name or r.name.startswith("opentelemetry") or "export" in r.message)
    ]
    assert len(about_export) == 1, [r.getMessage() for r in about_export]
    assert receiver.endpoint in about_export[0].getMessage()
