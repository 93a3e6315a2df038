"""The lethal trifecta: a session that read untrusted content and private data is held before
it sends anything out; each call alone is allowed, and the hold names the calls that brought
the labels in.

Real parts: the dataflow upstream over stdio (SDK), the gateway in-process and, per face, its
HTTP app under uvicorn or ``lockgate stdio`` with `mcp.Client` in both eras.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dataflow_support import FETCH, READ, SEND, agent, dataflow_config, sent
from gateway_faces import HTTP_FACES, Face, open_client
from support import serve_asgi

from gateway.gateway import Gateway
from gateway.http.app import build_app
from toolsets.result import ToolResult

HELD_REASON = (
    "private data may leave after untrusted content (session labels: private via "
    "web__read_file and untrusted via web__fetch_page)"
)


async def _held_reason(gateway: Gateway, result: ToolResult) -> str:
    pending = (result.meta or {}).get("lockgate/pending")
    assert result.is_error
    assert pending, result
    call = await gateway.store.get(pending["id"])
    assert call is not None
    return call.reason


async def test_the_third_call_of_the_trifecta_is_held_naming_the_two_earlier_calls(
    tmp_path: Path,
) -> None:
    async with Gateway.from_config(dataflow_config(tmp_path)) as gateway:
        ctx = agent("s1")
        assert not (await gateway.call_tool(FETCH, {"url": "https://x.example"}, ctx)).is_error
        assert not (await gateway.call_tool(READ, {"path": "secrets.txt"}, ctx)).is_error
        held = await gateway.call_tool(SEND, {"to": "a@example.com", "body": "hi"}, ctx)
        assert await _held_reason(gateway, held) == HELD_REASON
        assert sent(tmp_path) == ""


@pytest.mark.parametrize(
    "before",
    [
        pytest.param([], id="send-alone"),
        pytest.param([(FETCH, {"url": "https://x.example"})], id="after-untrusted-only"),
        pytest.param([(READ, {"path": "secrets.txt"})], id="after-private-only"),
    ],
)
async def test_each_call_alone_or_with_one_label_is_allowed(
    tmp_path: Path, before: list[tuple[str, dict[str, str]]]
) -> None:
    async with Gateway.from_config(dataflow_config(tmp_path)) as gateway:
        ctx = agent("s1")
        for name, args in before:
            assert not (await gateway.call_tool(name, args, ctx)).is_error
        result = await gateway.call_tool(SEND, {"to": "a@example.com", "body": "hi"}, ctx)
        assert not result.is_error, result
        assert sent(tmp_path) == "a@example.com: hi\n"


async def test_labels_stay_in_their_own_session(tmp_path: Path) -> None:
    async with Gateway.from_config(dataflow_config(tmp_path)) as gateway:
        await gateway.call_tool(FETCH, {"url": "https://x.example"}, agent("s1"))
        await gateway.call_tool(READ, {"path": "secrets.txt"}, agent("s2"))
        result = await gateway.call_tool(SEND, {"to": "a@example.com", "body": "x"}, agent("s2"))
        assert not result.is_error


async def test_a_failed_read_brings_no_label(tmp_path: Path) -> None:
    async with Gateway.from_config(dataflow_config(tmp_path)) as gateway:
        ctx = agent("s1")
        await gateway.call_tool(FETCH, {"url": "https://x.example"}, ctx)
        missing = await gateway.call_tool(READ, {"path": "nope.txt"}, ctx)
        assert missing.is_error
        result = await gateway.call_tool(SEND, {"to": "a@example.com", "body": "x"}, ctx)
        assert not result.is_error


@pytest.mark.parametrize("face", HTTP_FACES)
async def test_the_trifecta_is_held_over_mcp_in_both_eras(tmp_path: Path, face: Face) -> None:
    config = dataflow_config(tmp_path)
    gateway = Gateway.from_config(config)
    headers = {"Lockgate-Session": "k1"}
    async with (
        serve_asgi(build_app(gateway)) as base,
        open_client(face, config=config, url=f"{base}/mcp", headers=headers) as client,
    ):
        assert not (await client.call_tool(FETCH, {"url": "https://x.example"})).is_error
        assert not (await client.call_tool(READ, {"path": "secrets.txt"})).is_error
        held = await client.call_tool(SEND, {"to": "a@example.com", "body": "hi"})
        assert held.is_error
        pending = (held.meta or {})["lockgate/pending"]
        call = await gateway.store.get(pending["id"])
        assert call is not None
        assert call.reason == HELD_REASON
        assert sent(tmp_path) == ""
