"""JSON logs: one object per line in the documented schema, with the ids of the current span,
no secrets; ``lockgate serve --log-format json`` (or ``logging: {format: json}``) writes them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from gateway_faces import CLI, Face, open_client
from logging_functions import SECRET
from opentelemetry.sdk.trace import TracerProvider
from otlp_receiver import OTLPReceiver
from paths import HARNESS
from support import free_port, write_config

from gateway.logs import RESERVED, JsonFormatter

TOKEN = "sk-ant-api03-" + "A" * 40


class _Lines(logging.Handler):
    """Keeps each record as the JSON object the formatter wrote."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def lines() -> Iterator[_Lines]:
    handler, logger = _Lines(), logging.getLogger("lockgate.test-json")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_a_record_made_inside_a_span_carries_the_spans_trace_and_span_ids(lines: _Lines) -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("call") as span:
        logging.getLogger("lockgate.test-json").info("inside %s", "the call")
    logging.getLogger("lockgate.test-json").info("after the call")
    inside, after = lines.records
    context = span.get_span_context()
    assert inside["trace_id"] == f"{context.trace_id:032x}"
    assert inside["span_id"] == f"{context.span_id:016x}"
    assert inside["message"] == "inside the call"
    assert "trace_id" not in after
    assert "span_id" not in after


def test_each_record_is_one_line_of_json_in_the_documented_schema(lines: _Lines) -> None:
    log = logging.getLogger("lockgate.test-json")
    log.warning("two\nlines", extra={"server": "echo", "attempt": 2, "level": "clash"})
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    assert [line.count("\n") for line in lines.lines] == [0, 0]
    first, failed = lines.records
    assert list(first)[:4] == ["timestamp", "level", "logger", "message"]
    assert first["level"] == "WARNING"
    assert first["logger"] == "lockgate.test-json"
    assert first["message"] == "two\nlines"
    assert first["timestamp"].endswith("Z")
    assert (first["server"], first["attempt"], first["extra.level"]) == ("echo", 2, "clash")
    assert failed["level"] == "ERROR"
    assert "ValueError: boom" in failed["exception"]
    assert set(RESERVED) >= {"timestamp", "level", "logger", "message", "trace_id", "span_id"}


def test_no_secret_reaches_a_json_line(lines: _Lines) -> None:
    log = logging.getLogger("lockgate.test-json")
    log.info("upstream answered 401 to Bearer %s", TOKEN, extra={"api_key": "hunter2-hunter2"})
    log.info("headers", extra={"headers": {"Authorization": f"Bearer {TOKEN}"}, "note": TOKEN})
    try:
        raise RuntimeError(f"refused {TOKEN}")
    except RuntimeError:
        log.exception("call failed")
    text = "\n".join(lines.lines)
    assert TOKEN not in text
    assert "hunter2-hunter2" not in text
    assert "[REDACTED]" in lines.records[0]["message"]


def test_values_json_cannot_hold_are_written_as_text(lines: _Lines) -> None:
    logging.getLogger("lockgate.test-json").info("x", extra={"when": object, "ids": {1, 2}})
    record = lines.records[0]
    assert record["when"] == str(object)
    assert sorted(record["ids"]) == [1, 2]


def test_without_opentelemetry_the_json_lines_have_no_ids_and_no_error() -> None:
    # The MCP SDK itself imports opentelemetry's API; the formatter is loaded again without it.
    script = (
        "import importlib, logging, sys\n"
        "import gateway.logs.json_format as module\n"
        "sys.modules['opentelemetry'] = None\n"
        "module = importlib.reload(module)\n"
        "assert module._otel_trace is None\n"
        "record = logging.LogRecord('lockgate', 20, 'x.py', 1, 'hello', None, None)\n"
        "print(module.JsonFormatter().format(record))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    line = json.loads(done.stdout)
    assert line["message"] == "hello"
    assert "trace_id" not in line


def noisy_config(directory: Path, endpoint: str, **sections: Any) -> Path:
    """A gateway serving `logging_functions.noisy` (``fn__noisy``), tracing to ``endpoint``."""
    server = {"name": "fn", "transport": "python", "functions": ["logging_functions:noisy"]}
    telemetry = {"endpoint": endpoint, "schedule_delay": 0.1}
    return write_config(directory, [server], telemetry=telemetry, **sections)


def harness_env() -> dict[str, str]:
    """The environment with this harness importable (``logging_functions``)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(HARNESS), str(HARNESS.parents[1])])}


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every stderr line parsed as JSON, but the one plain readiness line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    return [json.loads(line) for line in lines if not line.startswith("lockgate: serving MCP")]


async def read_rest(stream: BufferedByteReceiveStream) -> bytes:
    """What ``stream`` holds until its end."""
    rest = b""
    with anyio.fail_after(30):
        while True:
            try:
                rest += await stream.receive()
            except anyio.EndOfStream:
                return rest


@pytest.mark.parametrize("how", ["flag", "config"])
async def test_serve_writes_json_lines_carrying_the_ids_of_the_calls_span(
    how: str, tmp_path: Path
) -> None:
    port = free_port()
    async with OTLPReceiver() as receiver:
        logging_section = {"logging": {"format": "json"}} if how == "config" else {}
        config = noisy_config(tmp_path, receiver.endpoint, **logging_section)
        argv = [*CLI, "serve", "-c", str(config), "--port", str(port)]
        argv += ["--log-format", "json"] if how == "flag" else []
        process = await anyio.open_process(argv, env=harness_env(), stdout=subprocess.DEVNULL)
        try:
            assert process.stderr is not None
            stderr = BufferedByteReceiveStream(process.stderr)
            seen = b""
            with anyio.fail_after(60):
                while b"serving MCP at" not in seen:
                    seen += await stderr.receive_until(b"\n", 65536) + b"\n"
            url = f"http://127.0.0.1:{port}/mcp"
            async with open_client(Face("http", "legacy"), config=config, url=url) as client:
                result = await client.call_tool("fn__noisy", {"text": "hi"})
            assert not result.is_error, result.content
            root = await receiver.wait_for_span(lambda s: s["name"] == "tools/call fn__noisy")
        finally:
            process.terminate()
            with anyio.fail_after(30):
                await process.wait()
        text = (seen + await read_rest(stderr)).decode()
        records = json_lines(text)
        in_trace = {s["span_id"] for s in receiver.spans if s["trace_id"] == root["trace_id"]}
    noisy = next(r for r in records if r["logger"] == "lockgate.test.noisy")
    assert noisy["trace_id"] == root["trace_id"]
    assert noisy["span_id"] in in_trace
    assert noisy["level"] == "WARNING"
    assert noisy["chars"] == 2
    assert SECRET not in text
    assert all({"timestamp", "level", "logger", "message"} <= set(r) for r in records)


def test_stdio_writes_json_lines_too(tmp_path: Path) -> None:
    config = noisy_config(tmp_path, f"http://127.0.0.1:{free_port()}")
    argv = [*CLI, "stdio", "-c", str(config), "--log-format", "json"]
    env = harness_env()
    done = subprocess.run(
        argv, input="", env=env, capture_output=True, text=True, timeout=60, check=True
    )
    records = json_lines(done.stderr)
    assert records, done.stderr
    assert any(r["logger"] == "gateway.telemetry" for r in records), records
