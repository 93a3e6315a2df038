"""`MCPServerToolset`: the tools of one upstream MCP server, as the call chain sees them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Self

import anyio
from anyio.abc import TaskGroup
from mcp import Client
from mcp.client.client import ConnectMode
from mcp_types import LoggingLevel

from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.calls import UpstreamCalls
from toolsets.upstream.catalogue import UpstreamCatalogue
from toolsets.upstream.client_requests import UpstreamLogHandler, UpstreamRequests
from toolsets.upstream.connection import (
    ClientTarget,
    NotificationListener,
    StatusHandler,
    UpstreamConnection,
    UpstreamStatus,
)
from toolsets.upstream.peer import Capability
from toolsets.upstream.sanitize import DEFAULT_MAX_DESCRIPTION
from toolsets.upstream.stdio_pipe import DEFAULT_MAX_MESSAGE, StdioPipe
from toolsets.upstream.tasks import UpstreamTasks

__all__ = [
    "ClientTarget",
    "MCPServerToolset",
    "NotificationListener",
    "StatusHandler",
    "UpstreamStatus",
]


class MCPServerToolset(Toolset):
    """Tools of one upstream MCP server over one persistent session.

    The session is opened in a background task owned by this toolset: entering the toolset starts
    connecting and returns at once (`wait_ready` waits for the first outcome), so several upstreams
    connect concurrently. A lost connection is reopened with capped exponential backoff and jitter,
    forever (`toolsets.upstream.connection`); the catalogue is re-listed after every (re)connect
    and on ``tools/list_changed`` (`toolsets.upstream.catalogue`); calls go over the current
    session (`toolsets.upstream.calls`). Titles and descriptions are served escaped and cut to
    ``max_description`` characters (0: no limit; see `toolsets.upstream.sanitize`).
    """

    def __init__(
        self,
        name: str,
        target: Callable[[], ClientTarget],
        *,
        timeout: float = 60.0,
        connect_timeout: float = 20.0,
        mode: ConnectMode = "auto",
        on_tools_changed: ToolsChangedHandler | None = None,
        on_status: StatusHandler | None = None,
        max_backoff: float = 30.0,
        max_result_bytes: int = DEFAULT_MAX_MESSAGE,
        max_description: int = DEFAULT_MAX_DESCRIPTION,
        client_requests: frozenset[Capability] = frozenset(),
    ) -> None:
        self.name = name
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.mode = mode
        self.max_result_bytes = max_result_bytes
        self.max_description = max_description
        self.requests = UpstreamRequests(name, allowed=client_requests, timeout=timeout)
        """The server's requests to the client and its log messages (relayed by the gateway)."""
        self.notification_listeners: list[NotificationListener] = []
        self.catalogue = UpstreamCatalogue(
            name, max_description=max_description, on_tools_changed=on_tools_changed
        )
        self.connection = UpstreamConnection(
            name,
            target,
            catalogue=self.catalogue,
            requests=self.requests,
            notification_listeners=self.notification_listeners,
            connect_timeout=connect_timeout,
            mode=mode,
            on_status=on_status,
            max_backoff=max_backoff,
            max_result_bytes=max_result_bytes,
        )
        self.tasks = UpstreamTasks(self.connection, self.catalogue)
        """Task requests to the server (``tasks/get``, ``tasks/result``, ``tasks/cancel``)."""
        self._calls = UpstreamCalls(
            self.connection, self.requests, timeout=timeout, tasks=self.tasks
        )
        self._tg: TaskGroup | None = None
        self._stopping: anyio.CancelScope | None = None  # the connection's (see `stop_soon`)

    @property
    def label(self) -> str:
        return self.name

    @property
    def tools(self) -> dict[str, ToolDef]:
        """The current catalogue (unprefixed names); empty until the server is first listed."""
        return self.catalogue.tools

    @property
    def version(self) -> int:
        return self.catalogue.version

    @property
    def status(self) -> UpstreamStatus:
        """``connecting``, ``up``, ``down``, ``reconnecting`` or ``stopped``."""
        return self.connection.status

    @property
    def detail(self) -> str:
        """What the last status change said (the protocol when up, the failure when down)."""
        return self.connection.detail

    @property
    def protocol_version(self) -> str | None:
        """The protocol of the last session opened."""
        return self.connection.protocol_version

    @property
    def client(self) -> Client | None:
        """The current session's SDK client while up (for requests beyond tools), else None."""
        return self.connection.client

    # The tests of the stdio fast path watch the session's pipe and client by these names.
    @property
    def _pipe(self) -> StdioPipe | None:
        return self.connection.pipe

    @property
    def _client(self) -> Client | None:
        return self.connection.client

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self.catalogue.tools

    def session_gone(self) -> None:
        """The server answered 404 to our session id: it forgot the session (it restarted)."""
        self.connection.forgotten = True

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        """Call ``tool`` on the upstream (see `UpstreamCalls.call`).

        Raises:
            UpstreamError: the server is down or the connection was lost (a call past the
                timeout is an error result: the server is still there).
            UpstreamRequestError: the server answered with a JSON-RPC error.
        """
        return await self._calls.call(name, args, ctx, tool)

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the first connection outcome; True when the server is up."""
        return await self.connection.wait_ready(timeout)

    def follow_logs(self, handler: UpstreamLogHandler) -> None:
        """Send the server's log messages to ``handler``."""
        self.requests.on_log = handler

    async def set_log_level(self, level: LoggingLevel | None) -> None:
        """Ask for log messages at ``level`` and up (None: none, as far as the era allows)."""
        self.requests.log_level = level
        await self.requests.apply_log_level(self.connection.client)

    async def __aenter__(self) -> Self:
        self._tg, self._stopping = anyio.create_task_group(), anyio.CancelScope()
        await self._tg.__aenter__()
        self._tg.start_soon(self.connection.run, self._stopping, name=f"upstream {self.name}")
        return self

    def stop_soon(self) -> None:
        """Start stopping: the server's shutdown begins now; `__aexit__` waits for its end."""
        if self._stopping is not None:  # the connection's own scope: ``_tg``'s is the caller's too
            self._stopping.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self.stop_soon()
        tg, self._tg = self._tg, None
        if tg is not None:  # the connection's `run` ends: its scope is cancelled
            # The body's exception is not the task group's: passed in, anyio would wrap it in an
            # ExceptionGroup and callers could no longer catch e.g. `ToolCollisionError`.
            await tg.__aexit__(None, None, None)
        self.connection.stopped()
        return None
