"""`UpstreamConnection`: one persistent session with an upstream MCP server, reopened when lost
(capped exponential backoff with jitter, forever) and when the server forgot it (HTTP 404)."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from typing import Any, Literal, Protocol

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.client import ConnectMode
from mcp.client.extension import ClientExtension, advertise
from mcp.server.apps import APP_MIME_TYPE
from mcp.server.apps import EXTENSION_ID as APPS_EXTENSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.upstream.catalogue import UpstreamCatalogue, listens
from toolsets.upstream.client_requests import UpstreamRequests
from toolsets.upstream.failures import describe
from toolsets.upstream.stdio_pipe import StdioPipe

__all__ = [
    "ClientTarget",
    "NotificationListener",
    "StatusHandler",
    "UpstreamConnection",
    "UpstreamStatus",
]

log = logging.getLogger("lockgate.upstream")
APPS: ClientExtension = advertise(APPS_EXTENSION, {"mimeTypes": [APP_MIME_TYPE]})
"""MCP Apps declared to every upstream (both eras): the gateway passes a tool's ``ui://`` link
and UI resources through (`toolsets.resource_uris`), so a server that lists UI tools only to a
host that can show them lists them to the gateway's clients."""
UpstreamStatus = Literal["connecting", "up", "down", "reconnecting", "stopped"]
ClientTarget = Any
"""Whatever `mcp.Client` accepts: a `Transport`, `StdioServerParameters`, a URL or a `Server`."""


class StatusHandler(Protocol):
    """Receives upstream status changes (``up``, ``down``, ``reconnecting``)."""

    async def __call__(self, server: str, status: UpstreamStatus, detail: str) -> None: ...


class NotificationListener(Protocol):
    """Hears every upstream notification but tools/list_changed, in both eras."""

    async def __call__(self, server: str, notification: types.ServerNotification) -> None: ...


async def _log_status(server: str, status: UpstreamStatus, detail: str) -> None:
    log.info("upstream %s is %s%s", server, status, f": {detail}" if detail else "")


class UpstreamConnection:
    """The session of one upstream server, while `run` runs: its SDK client and, for a stdio
    server, the pipe that direct calls use; the catalogue is listed again on every (re)connect.

    Args:
        name: The server's name.
        target: Makes what `mcp.Client` connects to, anew for each session.
        catalogue: The server's tools, listed on each session.
        requests: The server's requests to the client and its log messages.
        notification_listeners: Hear every notification but tools/list_changed.
        connect_timeout: Seconds a connection attempt may take.
        mode: The SDK client's connect mode (era negotiation).
        on_status: Told every status change (default: logged).
        max_backoff: The longest pause between two attempts, in seconds.
        max_result_bytes: The longest message a stdio server may send.
    """

    def __init__(
        self,
        name: str,
        target: Callable[[], ClientTarget],
        *,
        catalogue: UpstreamCatalogue,
        requests: UpstreamRequests,
        notification_listeners: list[NotificationListener],
        connect_timeout: float,
        mode: ConnectMode,
        on_status: StatusHandler | None,
        max_backoff: float,
        max_result_bytes: int,
    ) -> None:
        self.name = name
        self._target = target
        self._catalogue = catalogue
        self._requests = requests
        self._listeners = notification_listeners
        self.connect_timeout = connect_timeout
        self.mode = mode
        self._on_status: StatusHandler = on_status or _log_status
        self._max_backoff = max_backoff
        self.max_result_bytes = max_result_bytes
        self.status: UpstreamStatus = "connecting"
        self.detail = ""
        self.protocol_version: str | None = None
        self.client: Client | None = None
        """The current session's SDK client while up, else None."""
        self.pipe: StdioPipe | None = None
        """The current session's stdio pipe while up (stdio servers), else None."""
        self.forgotten = False
        """The server answered 404 to our session id: it forgot the session (it restarted)."""
        self._lost = anyio.Event()
        self._first_outcome = anyio.Event()
        self._was_up = False
        self._reopened: anyio.Event | None = None

    async def run(self, stopping: anyio.CancelScope) -> None:
        """Open sessions one after another until ``stopping`` is cancelled."""
        attempt = 0
        with stopping:
            while True:
                try:
                    await self._session()
                except Exception as exc:  # any failure of the upstream means: retry later
                    await self._set_status("reconnecting" if attempt else "down", describe(exc))
                finally:
                    self.client, self.pipe = None, None
                    self._first_outcome.set()
                attempt = 0 if self._was_up else attempt + 1
                delay = min(self._max_backoff, 0.25 * math.pow(2, min(attempt, 10)))
                await anyio.sleep(delay * (0.5 + random.random() / 2))

    def lost(self) -> None:
        """The session broke (a call found out): the next one opens."""
        self._lost.set()

    async def reopen(self) -> None:
        """Drop the forgotten session and wait (up to ``connect_timeout``) for a new one."""
        self.forgotten = False
        reopened = self._reopened = self._reopened or anyio.Event()
        log.info("upstream %s forgot our session (404): opening a new one", self.name)
        self._lost.set()
        with anyio.move_on_after(self.connect_timeout):
            await reopened.wait()

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the first connection outcome; True when the server is up."""
        with anyio.move_on_after(timeout if timeout is not None else self.connect_timeout + 1):
            await self._first_outcome.wait()
        return self.status == "up"

    def stopped(self) -> None:
        """`run` ended for good."""
        self.client, self.pipe = None, None
        self.status = "stopped"

    async def _session(self) -> None:
        self._lost = anyio.Event()
        self._was_up = False
        with anyio.CancelScope() as connecting:
            connecting.deadline = anyio.current_time() + self.connect_timeout
            target = self._target()
            lost = self._lost  # this session's: a pipe that exits late must not end the next
            pipe = (
                StdioPipe(
                    target, name=self.name, max_message=self.max_result_bytes, on_exit=lost.set
                )
                if isinstance(target, StdioServerParameters)
                else None
            )
            transport = pipe.transport() if pipe is not None else target
            async with Client(
                transport,
                mode=self.mode,
                message_handler=self._on_message,
                extensions=[APPS],
                **self._requests.callbacks(),
            ) as client:
                self.protocol_version = client.protocol_version
                async with anyio.create_task_group() as tg:
                    self._catalogue.new_session()
                    tg.start_soon(self._catalogue.follow, client)
                    if listens(client):  # subscribed before listing: no change falls between
                        await tg.start(self._catalogue.listen, client)
                    await self._catalogue.refresh(client)
                    await self._requests.apply_log_level(client)
                    connecting.deadline = math.inf
                    await self._up(client, pipe)
                    await self._lost.wait()
                    tg.cancel_scope.cancel()
                self.client, self.pipe = None, None
        if connecting.cancelled_caught:
            raise TimeoutError(f"no connection within {self.connect_timeout:g} s")
        raise ConnectionError("connection lost")

    async def _up(self, client: Client, pipe: StdioPipe | None) -> None:
        self.client, self.pipe, self._was_up = client, pipe, True
        self.forgotten = False
        await self._set_status("up", f"protocol {client.protocol_version}")
        reopened, self._reopened = self._reopened, None
        if reopened is not None:
            reopened.set()
        self._first_outcome.set()

    async def _on_message(self, message: Any) -> None:
        client = self.client
        # Modern connections also see listen events here; those are handled by the catalogue.
        if (
            isinstance(message, types.ToolListChangedNotification)
            and client is not None
            and client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            self._catalogue.changed()
        elif isinstance(message, Exception):
            log.debug("upstream %s sent an error: %r", self.name, message)
        elif not isinstance(message, types.ToolListChangedNotification):
            for listener in list(self._listeners):
                await listener(self.name, message)

    async def _set_status(self, status: UpstreamStatus, detail: str) -> None:
        self.status, self.detail = status, detail
        await self._on_status(self.name, status, detail)
