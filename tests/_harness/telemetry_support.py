"""Helpers for the telemetry suite: the traced upstream (tests/_harness/upstreams/traced_server.py)
as a config entry or an HTTP subprocess, and W3C ``traceparent`` values.

Imported by module name (``import telemetry_support``): pytest puts this directory on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream
from paths import HARNESS

TRACED_SERVER = str(HARNESS / "upstreams" / "traced_server.py")
UPSTREAM_SPAN = "upstream echo"
"""The name of the span the traced upstream reports for each ``echo`` call."""


def traced_upstream(name: str, endpoint: str, era: str = "dual", **extra: Any) -> dict[str, Any]:
    """Config entry for the traced server over stdio, exporting to ``endpoint``."""
    args = [TRACED_SERVER, "--endpoint", endpoint, "--era", era, "--name", name]
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": args, **extra}


@contextlib.asynccontextmanager
async def traced_http_upstream(endpoint: str, era: str = "dual") -> AsyncIterator[str]:
    """The traced server serving streamable HTTP in a subprocess; yields its MCP URL."""
    argv = [sys.executable, TRACED_SERVER, "--endpoint", endpoint, "--era", era, "--http", "0"]
    process = await anyio.open_process(argv, stderr=None)
    try:
        assert process.stdout is not None
        line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 100)
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        with anyio.CancelScope(shield=True):
            await process.wait()
        await process.aclose()


def new_traceparent() -> tuple[str, str, str]:
    """A fresh sampled W3C ``traceparent`` and its trace id and span id (lowercase hex)."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id
