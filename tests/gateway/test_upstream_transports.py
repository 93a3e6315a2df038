"""HTTP and SSE upstreams (echo servers in subprocesses): usable from clients of both eras, they
receive the ``headers`` configured for them, and never the downstream client's own Authorization.

The clients connect over HTTP, with an Authorization header of their own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_faces import (
    DOWNSTREAM_AUTHORIZATION,
    ECHO_TOOLS,
    HTTP_FACES,
    LEGACY,
    MODERN,
    Face,
    echo_over,
    running,
)
from mcp import Client
from support import write_config

UPSTREAMS = [
    pytest.param("web", MODERN, "Bearer web-token", id="http-upstream"),
    pytest.param("web-old", LEGACY, "Bearer web-old-token", id="legacy-only-http-upstream"),
    pytest.param("sse", LEGACY, "Bearer sse-token", id="legacy-only-sse-upstream"),
    pytest.param("bare", MODERN, None, id="http-upstream-without-headers"),
]


@pytest.fixture(scope="module")
async def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Path]:
    """The echo servers run for the whole module; the gateway config points at them."""
    web, web_port, web_url = echo_over("http", name="web")
    old, old_port, old_url = echo_over("http", era="legacy", name="web-old")
    sse, sse_port, sse_url = echo_over("sse", era="legacy", name="sse")
    bare, bare_port, bare_url = echo_over("http", name="bare")
    servers = [
        {"name": "web", "transport": "http", "url": web_url, "headers": _auth("web-token")},
        {"name": "web-old", "transport": "http", "url": old_url, "headers": _auth("web-old-token")},
        {"name": "sse", "transport": "sse", "url": sse_url, "headers": _auth("sse-token")},
        {"name": "bare", "transport": "http", "url": bare_url},
    ]
    commands = [(web, web_port), (old, old_port), (sse, sse_port), (bare, bare_port)]
    async with running(commands):
        yield write_config(tmp_path_factory.mktemp("transports"), servers)


@pytest.fixture(scope="module", params=HTTP_FACES)
def face(request: pytest.FixtureRequest) -> Face:
    face: Face = request.param
    return face


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_every_remote_upstream_is_listed_under_its_prefix(client: Client) -> None:
    listed = {tool.name for tool in (await client.list_tools()).tools}

    assert listed == {f"{p}__{t}" for p in ("web", "web-old", "sse", "bare") for t in ECHO_TOOLS}


@pytest.mark.parametrize(("prefix", "protocol", "authorization"), UPSTREAMS)
async def test_an_upstream_sees_only_its_configured_authorization(
    client: Client, prefix: str, protocol: str, authorization: str | None
) -> None:
    who = await client.call_tool(f"{prefix}__whoami", {})

    assert who.structured_content == {"protocol": protocol, "authorization": authorization}
    assert DOWNSTREAM_AUTHORIZATION not in str(who.content)


@pytest.mark.parametrize(("prefix", "protocol", "authorization"), UPSTREAMS)
async def test_calls_errors_and_progress_work_over_a_remote_upstream(
    client: Client, prefix: str, protocol: str, authorization: str | None
) -> None:
    steps: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    with anyio.fail_after(30):
        echoed = await client.call_tool(f"{prefix}__echo", {"text": prefix})
        failed = await client.call_tool(f"{prefix}__fail", {"message": "nope"})
        slow = await client.call_tool(
            f"{prefix}__slow", {"steps": 2}, progress_callback=on_progress
        )

    assert echoed.structured_content == {"result": prefix}
    assert failed.is_error
    assert slow.structured_content == {"result": "done 2"}
    assert steps == [1, 2]
