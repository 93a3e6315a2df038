"""What an upstream can push is bounded: a flood of tools/list_changed costs a few re-lists,
not one per notification; a flood of stderr is logged cut and rate-limited."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from gateway_faces import text_of
from support import echo_upstream, write_config

from gateway.gateway import Gateway
from toolsets.upstream import stderr_log

FLOOD = 2000
FLOOD_MIB = 20
LIST_DELAY = 0.02
"""Each re-list takes this long upstream: one per notification would take 40 s."""


class Changes:
    """A tools-changed listener to wait on: `wait` returns after the next change."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(self, source: str) -> None:
        self.event.set()

    async def wait(self) -> None:
        await self.event.wait()
        self.event = anyio.Event()


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_list_changed_flood_is_coalesced(tmp_path: Path, era: str) -> None:
    config = write_config(tmp_path, [echo_upstream("echo", era=era)])
    async with Gateway.from_config(config) as gateway:
        changes = Changes()
        gateway.on_tools_changed(changes)
        before = int(text_of(await gateway.call_tool("echo__lists_served", {})))
        flood = {"count": FLOOD, "list_delay": LIST_DELAY}
        flooded = await gateway.call_tool("echo__flood_list_changed", flood)
        added = text_of(await gateway.call_tool("echo__add_tool", {}))
        with anyio.fail_after(20):  # the add's notification comes after the flood's
            while f"echo__{added}" not in await gateway.tools():
                await changes.wait()
        served = int(text_of(await gateway.call_tool("echo__lists_served", {}))) - before
    assert text_of(flooded) == str(FLOOD)
    # One re-list in flight and one queued: the notifications that arrive during a re-list
    # cost one more, whatever their number.
    assert 1 <= served <= FLOOD // 50, f"{served} re-lists for {FLOOD + 1} notifications"


async def test_an_upstream_flooding_stderr_is_logged_bounded_and_keeps_working(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    upstream = echo_upstream("echo")
    upstream["args"] = [*upstream["args"], "--stderr-flood", str(FLOOD_MIB)]
    config = write_config(tmp_path, [upstream])
    with caplog.at_level(logging.INFO, logger="lockgate.upstream.stderr"):
        async with Gateway.from_config(config) as gateway:
            echoed = await gateway.call_tool("echo__echo", {"text": "still here"})
    lines = [r for r in caplog.records if r.name == "lockgate.upstream.stderr"]
    logged = sum(len(r.getMessage()) for r in lines)
    assert text_of(echoed) == "still here"
    assert lines[0].getMessage().startswith("upstream echo: flood xxx")
    assert lines[0].getMessage().endswith(f"... ({4096 - stderr_log.MAX_LINE} bytes cut)")
    assert any("stderr lines not logged (more than 20 a second)" in r.getMessage() for r in lines)
    assert logged < 100_000, f"{logged} characters logged for {FLOOD_MIB} MiB of stderr"


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_result_over_the_limit_is_an_error_result_and_the_upstream_stays_usable(
    tmp_path: Path, era: str
) -> None:
    config = write_config(tmp_path, [echo_upstream("echo", era=era)])
    async with Gateway.from_config(config) as gateway:
        huge = await gateway.call_tool("echo__big", {"kib": 50 * 1024})  # 50 MiB
        fine = await gateway.call_tool("echo__big", {"kib": 1024})
        echoed = await gateway.call_tool("echo__echo", {"text": "still here"})
    assert huge.is_error
    assert "over the gateway's limit of 16777216 bytes (max_result_bytes)" in text_of(huge)
    assert not fine.is_error
    assert len(text_of(fine)) == 1024 * 1024
    assert text_of(echoed) == "still here"
