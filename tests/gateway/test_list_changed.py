"""An upstream's tools/list_changed reaches every downstream client, in the client's own era.

Legacy clients get a ``notifications/tools/list_changed``; modern clients get an event on their
``subscriptions/listen`` stream. Upstreams of both eras announce changes differently too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from gateway_faces import MODERN, Face, open_client, serve_gateway, text_of
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged
from support import echo_upstream, write_config

UPSTREAMS = [
    pytest.param("old", id="legacy-only-upstream"),
    pytest.param("new", id="modern-only-upstream"),
]


class Notifications:
    """A message handler: ``changed`` is set by the next ``tools/list_changed`` notification."""

    def __init__(self) -> None:
        self.changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changed.set()


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    servers = [echo_upstream("old", era="legacy"), echo_upstream("new", era="modern")]
    return write_config(tmp_path_factory.mktemp("list-changed"), servers)


@pytest.fixture(scope="module")
async def watched(
    face: Face, gateway_config: Path, gateway_url: str
) -> AsyncIterator[tuple[Client, Notifications]]:
    notifications = Notifications()
    opened = open_client(
        face, config=gateway_config, url=gateway_url, message_handler=notifications
    )
    async with opened as client:
        yield client, notifications


async def test_the_gateway_advertises_tools_list_changed(
    watched: tuple[Client, Notifications],
) -> None:
    client, _ = watched

    assert client.server_capabilities.tools is not None
    assert client.server_capabilities.tools.list_changed is True


async def _add_tool_and_wait(client: Client, notifications: Notifications, prefix: str) -> str:
    """Add a tool upstream; returns its name once the client was told the list changed."""
    if client.protocol_version == MODERN:
        async with client.listen(tools_list_changed=True) as subscription:
            added = text_of(await client.call_tool(f"{prefix}__add_tool", {}))
            with anyio.fail_after(30):
                event = await anext(aiter(subscription))
        assert isinstance(event, ToolsListChanged)
        return added
    notifications.changed = anyio.Event()
    added = text_of(await client.call_tool(f"{prefix}__add_tool", {}))
    with anyio.fail_after(30):
        await notifications.changed.wait()
    return added


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_tool_added_upstream_is_announced_listed_and_callable(
    watched: tuple[Client, Notifications], prefix: str
) -> None:
    client, notifications = watched

    added = await _add_tool_and_wait(client, notifications, prefix)
    listed = {tool.name for tool in (await client.list_tools()).tools}
    result = await client.call_tool(f"{prefix}__{added}", {})

    assert added.startswith("extra_")
    assert f"{prefix}__{added}" in listed
    assert not result.is_error
    assert text_of(result) == added


async def test_a_legacy_session_that_never_listed_tools_still_hears_of_changes(
    gateway_config: Path,
) -> None:
    quiet = Notifications()
    async with serve_gateway(gateway_config) as url:
        legacy = Face("http", "legacy")
        async with (
            open_client(legacy, config=gateway_config, url=url, message_handler=quiet),
            open_client(Face("http", "auto"), config=gateway_config, url=url) as actor,
        ):
            await actor.call_tool("old__add_tool", {})
            with anyio.fail_after(30):
                await quiet.changed.wait()
    assert quiet.changed.is_set()
