"""Real HTTP peers for the event sink tests: uvicorn on 127.0.0.1, an ephemeral port."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import pytest
import uvicorn
from starlette.types import ASGIApp


class _Server(uvicorn.Server):
    """A uvicorn server that tells when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@asynccontextmanager
async def serve(app: ASGIApp) -> AsyncIterator[str]:
    """Run ``app`` under uvicorn for the block; yields its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", ws="none", log_level="warning")
    server = _Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(30):
            await server.ready.wait()
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
    sock.close()


@pytest.fixture
def http_server() -> Callable[[ASGIApp], AbstractAsyncContextManager[str]]:
    """`serve`, as a fixture: ``async with http_server(app) as url: ...``."""
    return serve
