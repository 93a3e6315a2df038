"""Support for the MCP Apps tests: the SDK-made app server and a direct client to an upstream."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from mcp import Client, StdioServerParameters
from paths import HARNESS
from upstreams.apps_server import ADMIN, APP_MIME, CHART, REPORT

__all__ = ["ADMIN", "APPS_SERVER", "APP_MIME", "CHART", "REPORT", "direct_client"]

APPS_SERVER = str(HARNESS / "upstreams" / "apps_server.py")


@contextlib.asynccontextmanager
async def direct_client(command: Sequence[str]) -> AsyncIterator[Client]:
    """An `mcp.Client` straight to the stdio server ``command`` (no gateway between)."""
    target = StdioServerParameters(command=command[0], args=list(command[1:]))
    async with Client(target, read_timeout_seconds=30) as client:
        yield client
