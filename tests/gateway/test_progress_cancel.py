"""Progress notifications are forwarded and cancellation reaches the upstream tool, on every face.

An echo upstream's ``wait_cancelled`` tool reports whether any ``slow`` call was *ever*
cancelled, so here every face gets a gateway (and upstreams) of its own, and each upstream is
cancelled once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from gateway_faces import Face, open_face
from mcp import Client
from support import echo_upstream, write_config

from gateway.gateway import Gateway

UPSTREAMS = [
    pytest.param("old", id="legacy-only-upstream"),
    pytest.param("new", id="modern-only-upstream"),
]


@pytest.fixture(scope="module")
def gateway_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    servers = [echo_upstream("old", era="legacy"), echo_upstream("new", era="modern")]
    return write_config(tmp_path_factory.mktemp("progress"), servers)


@pytest.fixture(scope="module")
async def client(face: Face, gateway_config: Path) -> AsyncIterator[Client]:
    async with open_face(face, gateway_config) as client:
        yield client


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_progress_from_the_upstream_reaches_the_client(client: Client, prefix: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(30):
        result = await client.call_tool(
            f"{prefix}__slow", {"steps": 3}, progress_callback=on_progress
        )

    assert not result.is_error
    assert result.structured_content == {"result": "done 3"}
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_cancelling_a_call_cancels_the_upstream_tool(client: Client, prefix: str) -> None:
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async def slow_call() -> None:
        await client.call_tool(f"{prefix}__slow", {"steps": 1000}, progress_callback=on_progress)

    with anyio.fail_after(15):
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await started.wait()
            tg.cancel_scope.cancel()
        cancelled = await client.call_tool(f"{prefix}__wait_cancelled", {"timeout": 10})

    assert cancelled.structured_content == {"result": True}


@pytest.fixture(scope="module")
async def impatient(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    """An in-process gateway whose upstreams time calls out after half a second."""
    servers = [
        echo_upstream("old", era="legacy", timeout=0.5),
        echo_upstream("new", era="modern", timeout=0.5),
    ]
    async with Gateway.from_config(write_config(tmp_path_factory.mktemp("timeout"), servers)) as gw:
        yield gw


@pytest.mark.parametrize("prefix", UPSTREAMS)
async def test_a_call_past_the_server_timeout_is_an_error_and_is_cancelled_upstream(
    impatient: Gateway, prefix: str
) -> None:
    with anyio.fail_after(15):
        result = await impatient.call_tool(f"{prefix}__slow", {"steps": 1000})
        cancelled = await impatient.call_tool(f"{prefix}__wait_cancelled", {"timeout": 10})

    assert result.is_error
    assert "timed out after 0.5 s" in result.content[0].text  # type: ignore[union-attr]
    assert cancelled.structured_content == {"result": True}
