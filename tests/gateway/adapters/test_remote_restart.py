"""The remote adapters (LangChain toolkit, pydantic-ai toolset) outlive a gateway restart: a
2025-11-25 session the restarted gateway no longer knows (HTTP 404) is replaced by a new one, and
the request, never delivered, is sent again."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup, TaskStatus
from support import echo_upstream, free_port, serve_asgi, write_config

from gateway.adapters._remote import RemoteGateway
from gateway.gateway import Gateway
from gateway.http.app import build_app


class Run:
    """One run of the gateway on a port: started in a task group, stopped on demand."""

    def __init__(self, config: Path, port: int) -> None:
        self.config, self.port = config, port
        self.stop, self.stopped = anyio.Event(), anyio.Event()

    async def serve(self, *, task_status: TaskStatus[None]) -> None:
        try:
            async with serve_asgi(build_app(Gateway.from_config(self.config)), self.port):
                task_status.started()
                await self.stop.wait()
        finally:
            self.stopped.set()

    @classmethod
    async def start(cls, tg: TaskGroup, config: Path, port: int) -> Run:
        run = cls(config, port)
        await tg.start(run.serve)
        return run

    async def end(self) -> None:
        self.stop.set()
        await self.stopped.wait()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_remote_gateway_opens_a_new_session_after_the_gateway_restarts(
    tmp_path: Path, mode: str
) -> None:
    config = write_config(tmp_path, [echo_upstream("echo")])
    port = free_port()
    async with anyio.create_task_group() as tg:
        first = await Run.start(tg, config, port)
        async with RemoteGateway(f"http://127.0.0.1:{port}", mode=mode, timeout=30) as remote:
            before = await remote.call_tool("echo__echo", {"text": "before"})
            await first.end()
            second = await Run.start(tg, config, port)
            tools = await remote.list_tools()
            after = await remote.call_tool("echo__echo", {"text": "after"})
        await second.end()

    assert (before.first_text(), after.first_text()) == ("before", "after")
    assert "echo__echo" in tools
