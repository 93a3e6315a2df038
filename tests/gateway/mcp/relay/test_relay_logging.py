"""Upstream log messages reach only the downstream sessions that asked, each at its own level,
tagged with the server: 2025-11-25 sessions ask with ``logging/setLevel``, 2026-07-28 requests
with the ``io.modelcontextprotocol/logLevel`` ``_meta`` key (their own call's messages)."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import mcp_types as types
import pytest
from mcp import Client
from relay_support import (
    LEGACY_FACES,
    MODERN_FACES,
    UPSTREAM_ERAS,
    Answers,
    Face,
    Served,
    open_client,
)

TOLD = [("warning", "warning: hi"), ("error", "error: hi")]
"""What the ``chat`` tool logs at warning and above (it logs debug, info, warning and error)."""


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    """``logging/setLevel`` (the SDK's own helper warns: logging is deprecated at 2026-07-28)."""
    request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=level))
    await client.session.send_request(request, types.EmptyResult)


@UPSTREAM_ERAS
@pytest.mark.parametrize("face", LEGACY_FACES)
async def test_set_level_sessions_get_the_messages_at_their_level_and_others_none(
    served: Served, face: Face, upstream: str
) -> None:
    warned, verbose, silent = Answers(), Answers(), Answers()
    with anyio.fail_after(30):
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(
                    open_client(face, served.gateway, served.url, answers, capable=False)
                )
                for answers in (warned, verbose, silent)
            ]
            assert clients[0].server_capabilities.logging is not None
            await set_level(clients[0], "warning")
            await set_level(clients[1], "debug")
            result = await clients[2].call_tool(f"{upstream}__chat", {"text": "hi"})
            assert not result.is_error
            # Session-wide messages travel on each session's own stream, maybe after the result.
            await warned.log_count(2)
            await verbose.log_count(4)
    logger = f"{upstream}/chat"
    assert warned.logs == [(level, logger, data) for level, data in TOLD]
    assert [level for level, _, _ in verbose.logs] == ["debug", "info", "warning", "error"]
    assert silent.logs == []


@UPSTREAM_ERAS
@pytest.mark.parametrize("face", MODERN_FACES)
@pytest.mark.parametrize("capable", [True, False], ids=["parked", "plain"])
async def test_a_modern_request_gets_its_own_calls_messages_at_the_level_it_asked(
    served: Served, face: Face, upstream: str, capable: bool
) -> None:
    asking, other = Answers(), Answers()
    gateway, url = served.gateway, served.url
    with anyio.fail_after(30):
        async with (
            open_client(face, gateway, url, asking, capable=capable, log_level="warning") as c,
            open_client(face, gateway, url, other, capable=capable) as quiet,
        ):
            assert c.server_capabilities.logging is not None
            await quiet.call_tool(f"{upstream}__chat", {"text": "not asked"})
            result = await c.call_tool(f"{upstream}__chat", {"text": "hi"})
    assert not result.is_error
    # Delivered on the request's own stream, before its result.
    assert asking.logs == [(level, f"{upstream}/chat", data) for level, data in TOLD]
    assert other.logs == []


async def test_an_upstream_is_set_to_the_most_verbose_level_of_the_live_sessions(
    served: Served,
) -> None:
    face = Face("stdio", "legacy")  # its session is over when the client has left
    gateway, url = served.gateway, served.url

    async def last_level(client: Client) -> str:
        result = await client.call_tool("legacy__log_levels", {})
        assert isinstance(result.structured_content, dict)
        return str(result.structured_content["result"][-1])

    with anyio.fail_after(30):
        async with open_client(face, gateway, url, Answers(), capable=False) as quiet:
            await set_level(quiet, "warning")
            async with open_client(face, gateway, url, Answers(), capable=False) as verbose:
                await set_level(verbose, "debug")
                during = await last_level(quiet)
            after = await last_level(quiet)
    assert (during, after) == ("debug", "warning")
