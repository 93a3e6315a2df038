"""Running the HTTP face under uvicorn, with a shutdown that does not hang on open streams."""

from __future__ import annotations

from types import FrameType

import uvicorn

from gateway.gateway import Gateway
from gateway.http_app import build_app

__all__ = ["GRACEFUL_SHUTDOWN", "serve"]

GRACEFUL_SHUTDOWN = 5
"""Seconds in-flight requests get on shutdown; held calls stay pending for the restart."""


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway) -> None:
        super().__init__(config)
        self.gateway = gateway

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Before uvicorn waits for connections: held calls must not be cancelled as if the
        # client withdrew them, and event streams must end now rather than at the timeout.
        self.gateway.closing()
        self.gateway.events.close()
        super().handle_exit(sig, frame)


def serve(gateway: Gateway, *, host: str, port: int) -> None:
    """Serve ``gateway`` on ``host:port`` until SIGINT/SIGTERM."""
    config = uvicorn.Config(
        build_app(gateway),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
    )
    _Server(config, gateway).run()
