"""What an upstream can push is bounded: a flood of tools/list_changed costs a couple of
re-lists, not one per notification."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from gateway_faces import text_of
from support import echo_upstream, write_config

from gateway.gateway import Gateway

FLOOD = 2000
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
