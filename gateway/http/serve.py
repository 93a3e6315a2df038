"""Running the HTTP face under uvicorn, with a shutdown that does not hang on open streams."""

from __future__ import annotations

import errno
import socket
import sys
from types import FrameType

import uvicorn

from gateway.gateway import Gateway
from gateway.http.app import build_app
from gateway.logs import uvicorn_log_config
from toolsets.errors import LockgateError

__all__ = ["GRACEFUL_SHUTDOWN", "listen_socket", "serve"]

GRACEFUL_SHUTDOWN = 5
"""Seconds in-flight requests get on shutdown; held calls stay pending for the restart."""


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, gateway: Gateway, url: str) -> None:
        super().__init__(config)
        self.gateway = gateway
        self.url = url

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        # The gateway starts before uvicorn's lifespan, so a start-up failure (a database
        # down, a store that cannot open) is raised as itself and reported in one line, not
        # logged by uvicorn with a traceback; inside the signal capture, so SIGTERM still
        # closes the gateway before the process ends.
        with self.capture_signals():
            async with self.gateway:
                await self._serve(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:  # bound and accepting: only now is "serving" true
            print(f"lockgate: serving MCP at {self.url}", file=sys.stderr, flush=True)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Before uvicorn waits for connections: held calls must not be cancelled as if the
        # client withdrew them, and event streams must end now rather than at the timeout.
        self.gateway.closing()
        self.gateway.events.close()
        super().handle_exit(sig, frame)


def listen_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening.

    Raises:
        LockgateError: the port is taken or may not be used, naming it and the fix.
    """
    try:
        return socket.create_server((host, port), family=_family(host), backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fix = "stop what holds it, or choose another port with --port"
            raise LockgateError(f"port {port} on {host} is already in use: {fix}") from None
        if exc.errno == errno.EACCES:
            fix = "choose a port above 1023 with --port"
            raise LockgateError(f"not allowed to listen on {host}:{port}: {fix}") from None
        fix = "check listen.host, or pass --host"
        raise LockgateError(f"cannot listen on {host}:{port}: {exc.strerror}; {fix}") from None


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def serve(gateway: Gateway, *, host: str, port: int) -> None:
    """Serve ``gateway`` on ``host:port`` until SIGINT/SIGTERM; "serving" is printed once the
    port is bound and the gateway started."""
    sock = listen_socket(host, port)
    config = uvicorn.Config(
        build_app(gateway, manage_gateway=False),
        log_level="warning",
        log_config=uvicorn_log_config(),
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN,
    )
    shown = f"[{host}]" if ":" in host else host
    _Server(config, gateway, f"http://{shown}:{port}/mcp").run(sockets=[sock])
