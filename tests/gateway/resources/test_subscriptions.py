"""Resource subscriptions and list changes through the gateway, in both eras.

A 2025-11-25 client subscribes with ``resources/subscribe`` and hears updates on its session; a
2026-07-28 client names the resources on a ``subscriptions/listen`` stream. The gateway holds
one subscription per upstream resource, however many sessions hold it, in the upstream's own
era, and relays each update to the sessions that hold the resource only.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest
from gateway_faces import HTTP_FACES, MODERN, Face, open_client
from mcp import Client
from mcp.shared.exceptions import MCPError
from surface_support import (
    UPSTREAMS,
    Heard,
    Served,
    all_resources,
    listening,
    subscribe,
    until,
    uri,
)

Watched = tuple[Client, Heard]


async def _write(client: Client, prefix: str, note: str) -> None:
    result = await client.call_tool(f"{prefix}__write_note", {"note": note, "text": note})
    assert not result.is_error


@contextlib.asynccontextmanager
async def _other(face: Face, config: Path, served: Served) -> AsyncIterator[Watched]:
    """One more client on the HTTP gateway, and what it hears."""
    heard = Heard()
    async with open_client(face, config=config, url=served.url, message_handler=heard) as client:
        yield client, heard


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_an_update_reaches_the_session_that_subscribed(watched: Watched, prefix: str) -> None:
    client, heard = watched
    note = uri(prefix, "echo://notes/watched")

    async with listening(client, [note]) as held:
        await _write(client, prefix, "watched")
        await heard.until(lambda: note in heard.updated)

    assert held == [note]


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_no_update_arrives_once_the_session_let_go(watched: Watched, prefix: str) -> None:
    client, heard = watched
    gone, kept = uri(prefix, "echo://notes/gone"), uri(prefix, "echo://notes/kept")
    async with listening(client, [gone]):
        pass
    since = len(heard.updated)

    async with listening(client, [kept]):
        await _write(client, prefix, "gone")
        await _write(client, prefix, "kept")  # relayed in order: after "gone", were it relayed
        await heard.until(lambda: kept in heard.updated[since:])

    assert gone not in heard.updated[since:]


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_an_update_reaches_only_the_sessions_holding_it(
    face: Face, surface_config: Path, served: Served
) -> None:
    mine, theirs = uri("old", "echo://notes/mine"), uri("old", "echo://notes/theirs")

    async with (
        _other(face, surface_config, served) as (me, my_news),
        _other(face, surface_config, served) as (them, their_news),
        listening(me, [mine]),
        listening(them, [theirs]),
    ):
        await _write(me, "old", "mine")
        await _write(me, "old", "theirs")
        await my_news.until(lambda: mine in my_news.updated)
        await their_news.until(lambda: theirs in their_news.updated)

    assert mine not in their_news.updated
    assert theirs not in my_news.updated


@pytest.mark.parametrize("prefix", ["old", "dual"])
async def test_one_upstream_subscription_serves_every_holder_until_the_last_goes_away(
    surface_config: Path, served: Served, prefix: str
) -> None:
    shared = uri(prefix, "echo://notes/shared")
    held = served.gateway.parts.resources.subscriptions.held
    legacy, modern = (Face("http", mode) for mode in ("legacy", "auto"))

    async with _other(modern, surface_config, served) as (last, news):
        async with _other(legacy, surface_config, served) as (first, _), listening(last, [shared]):
            await subscribe(first, shared)
            await subscribe(first, shared, on=False)
            await _write(first, prefix, "shared")
            await news.until(lambda: shared in news.updated)
            assert held(prefix, "echo://notes/shared")
        await until(lambda: not held(prefix, "echo://notes/shared"))


async def test_a_session_that_goes_away_lets_go_of_what_it_held(
    surface_config: Path, served: Served
) -> None:
    held = served.gateway.parts.resources.subscriptions.held

    async with _other(Face("http", "legacy"), surface_config, served) as (client, _):
        await subscribe(client, uri("old", "echo://notes/left"))
        assert held("old", "echo://notes/left")
    await until(lambda: not held("old", "echo://notes/left"))


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_list_changes_of_resources_and_prompts_reach_the_session(
    watched: Watched, prefix: str
) -> None:
    client, heard = watched
    note = f"new-{len(heard.changed)}"

    async with listening(client):
        since = len(heard.changed)
        await _write(client, prefix, note)
        await heard.until(lambda: "resources" in heard.changed[since:])
        added = (await client.call_tool(f"{prefix}__add_prompt", {})).content[0]
        await heard.until(lambda: "prompts" in heard.changed[since:])

    resources = [r.uri for r in await all_resources(client)]
    prompts = [p.name for p in (await client.list_prompts()).prompts]
    assert isinstance(added, types.TextContent)
    assert f"{prefix}__{added.text}" in prompts
    assert uri(prefix, f"echo://notes/{note}") in resources


async def test_only_what_the_session_may_see_is_held(watched: Watched) -> None:
    client, _ = watched
    known, unknown = uri("new", "echo://readme"), uri("nowhere", "echo://readme")

    if client.protocol_version == MODERN:
        async with listening(client, [known, unknown, "echo://readme"]) as held:
            assert held == [known]
        return
    with pytest.raises(MCPError) as raised:
        await subscribe(client, unknown)
    assert raised.value.error.code == types.INVALID_PARAMS
