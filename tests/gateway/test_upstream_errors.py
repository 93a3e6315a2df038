"""Upstream failures are raised as `UpstreamError` and mapped once per face: MCP clients of both
eras (HTTP and stdio) read a dead upstream as an error result and get an upstream's JSON-RPC
error as that error; the Python API raises; the CLI exits 4."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_faces import CLI, text_of
from mcp import Client
from mcp.shared.exceptions import MCPError
from paths import HARNESS
from support import write_config

from gateway.gateway import Gateway
from toolsets.errors import UpstreamError, UpstreamRequestError

FAULTY = str(HARNESS / "upstreams" / "faulty_server.py")
REJECT_CODE = -32042


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    server = {"name": "faulty", "command": sys.executable, "args": [FAULTY]}
    return write_config(tmp_path_factory.mktemp("faulty"), [server])


@pytest.fixture
async def gateway(gateway_config: Path) -> AsyncIterator[Gateway]:
    async with Gateway.from_config(gateway_config) as gw:
        yield gw


async def until_up(call: object) -> None:
    """Wait until the upstream answers again (it restarts after a crash): polling is the only
    sign of another process starting."""
    with anyio.fail_after(30):
        while True:
            try:
                result = await call("faulty__echo", {"text": "back"})  # type: ignore[operator]
            except UpstreamError:
                result = None
            if result is not None and not result.is_error:
                return
            await anyio.sleep(0.05)


async def test_an_upstream_json_rpc_error_reaches_the_client_as_that_error(client: Client) -> None:
    with anyio.fail_after(30), pytest.raises(MCPError) as caught:
        await client.call_tool("faulty__reject", {})

    assert caught.value.error.code == REJECT_CODE
    assert "rejected by the upstream" in caught.value.error.message


async def test_an_upstream_that_dies_mid_call_is_an_error_result_the_model_reads(
    client: Client,
) -> None:
    await until_up(client.call_tool)
    with anyio.fail_after(30):
        result = await client.call_tool("faulty__crash", {})

    assert result.is_error
    assert "Server 'faulty' connection lost" in text_of(result)
    await until_up(client.call_tool)  # and it comes back


async def test_the_python_api_raises_upstream_errors(gateway: Gateway) -> None:
    with anyio.fail_after(30), pytest.raises(UpstreamRequestError) as rejected:
        await gateway.call_tool("faulty__reject", {})
    await until_up(gateway.call_tool)
    with anyio.fail_after(30), pytest.raises(UpstreamError) as lost:
        await gateway.call_tool("faulty__crash", {})

    assert (rejected.value.code, rejected.value.server) == (REJECT_CODE, "faulty")
    assert lost.value.server == "faulty"
    assert "connection lost" in str(lost.value)


def test_the_cli_exits_4_on_an_upstream_error(gateway_config: Path) -> None:
    command = [*CLI, "call", "faulty__reject", "--args", "{}", "--config", str(gateway_config)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    assert done.returncode == 4, done.stderr
    assert "rejected by the upstream" in done.stderr
