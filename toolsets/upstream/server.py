"""`MCPServerToolset`: one upstream MCP server, its session, reconnects and list_changed refresh."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client, StdioServerParameters
from mcp.client.client import ConnectMode
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import LoggingLevel
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext
from toolsets.errors import UpstreamError, UpstreamRequestError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.upstream.client_requests import REFUSED, UpstreamRequests
from toolsets.upstream.convert import tool_def_from_mcp, tool_result_from_mcp
from toolsets.upstream.direct_call import DirectCall
from toolsets.upstream.peer import Capability
from toolsets.upstream.sanitize import DEFAULT_MAX_DESCRIPTION
from toolsets.upstream.stdio_pipe import DEFAULT_MAX_MESSAGE, TOO_LARGE, StdioPipe

__all__ = [
    "ClientTarget",
    "MCPServerToolset",
    "NotificationListener",
    "StatusHandler",
    "UpstreamStatus",
]

log = logging.getLogger("lockgate.upstream")
UpstreamStatus = Literal["connecting", "up", "down", "reconnecting", "stopped"]
ClientTarget = Any
"""Whatever `mcp.Client` accepts: a `Transport`, `StdioServerParameters`, a URL or a `Server`."""

_LOST_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class StatusHandler(Protocol):
    """Receives upstream status changes (``up``, ``down``, ``reconnecting``)."""

    async def __call__(self, server: str, status: UpstreamStatus, detail: str) -> None: ...


class NotificationListener(Protocol):
    """Hears every upstream notification but tools/list_changed, in both eras."""

    async def __call__(self, server: str, notification: types.ServerNotification) -> None: ...


async def _log_status(server: str, status: UpstreamStatus, detail: str) -> None:
    log.info("upstream %s is %s%s", server, status, f": {detail}" if detail else "")


class MCPServerToolset(Toolset):
    """Tools of one upstream MCP server over one persistent session.

    The session is opened in a background task owned by this toolset: entering the toolset starts
    connecting and returns at once (`wait_ready` waits for the first outcome), so several upstreams
    connect concurrently. A lost connection is reopened with capped exponential backoff and jitter,
    forever; the catalogue is re-listed after every (re)connect and on ``tools/list_changed``.
    Titles and descriptions are served escaped and cut to ``max_description`` characters (0: no
    limit; see `toolsets.upstream.sanitize`).
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
        self._target = target
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.mode = mode
        self._on_tools_changed = on_tools_changed
        self._on_status: StatusHandler = on_status or _log_status
        self._max_backoff = max_backoff
        self.max_result_bytes = max_result_bytes
        self.max_description = max_description
        self.requests = UpstreamRequests(name, allowed=client_requests, timeout=timeout)
        """The server's requests to the client and its log messages (relayed by the gateway)."""
        self.status: UpstreamStatus = "connecting"
        self.detail = ""
        self.protocol_version: str | None = None
        self._client: Client | None = None
        self._pipe: StdioPipe | None = None
        self._tools: dict[str, ToolDef] = {}
        self._version = 0
        self._lost = anyio.Event()
        self._first_outcome = anyio.Event()
        self._tg: TaskGroup | None = None
        self._stopping: anyio.CancelScope | None = None  # `_run`'s (see `stop_soon`)
        self._was_up = False
        self._gone = False
        self._reopened: anyio.Event | None = None
        self._stale = anyio.Event()
        self.notification_listeners: list[NotificationListener] = []

    @property
    def label(self) -> str:
        return self.name

    @property
    def tools(self) -> dict[str, ToolDef]:
        """The current catalogue (unprefixed names); empty while the server is down."""
        return self._tools

    @property
    def version(self) -> int:
        return self._version

    @property
    def client(self) -> Client | None:
        """The current session's SDK client while up (for requests beyond tools), else None."""
        return self._client

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self._tools

    def session_gone(self) -> None:
        """The server answered 404 to our session id: it forgot the session (it restarted)."""
        self._gone = True

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        """Call ``tool`` on the upstream; a call refused because the server forgot our session
        (HTTP 404, so never delivered) is sent once more on a new session.

        Raises:
            UpstreamError: the server is down or the connection was lost (a call past the
                timeout is an error result: the server is still there).
            UpstreamRequestError: the server answered with a JSON-RPC error.
        """
        try:
            return await self._call(name, args, ctx, tool)
        except UpstreamRequestError:
            if not self._gone:
                raise
        await self._reopen()
        return await self._call(name, args, ctx, tool)

    async def _reopen(self) -> None:
        """Drop the forgotten session and wait (up to ``connect_timeout``) for a new one."""
        self._gone = False
        reopened = self._reopened = self._reopened or anyio.Event()
        log.info("upstream %s forgot our session (404): opening a new one", self.name)
        self._lost.set()
        with anyio.move_on_after(self.connect_timeout):
            await reopened.wait()

    async def _call(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        client = self._client
        if client is None:
            message = f"Server {self.name!r} is unavailable ({self.status})."
            raise UpstreamError(message, server=self.name)
        progress, pipe = ctx.progress, self._pipe
        meta = self.requests.call_meta(ctx, client.protocol_version)
        with anyio.move_on_after(self.timeout), self.requests.calling(ctx):
            try:
                if pipe is not None and progress is None and not self.requests.streams(ctx):
                    call = DirectCall(pipe, tool.upstream_name, args, meta)
                    return await call.run(self.name, self.requests)
                result = await client.call_tool(
                    tool.upstream_name, dict(args), progress_callback=progress, meta=meta
                )
                return tool_result_from_mcp(result)
            except MCPError as exc:
                error = exc.error
                if isinstance(error.data, dict) and error.data.keys() & {TOO_LARGE, REFUSED}:
                    return ToolResult.error(error.message)  # the model reads the limit or refusal
                if error.code == types.CONNECTION_CLOSED:  # the SDK client lost the server
                    self._lost.set()
                    message = f"Server {self.name!r} connection lost: {error.message}"
                    raise UpstreamError(message, server=self.name) from None
                raise UpstreamRequestError(
                    error.message, server=self.name, code=error.code, data=error.data
                ) from None
            except _LOST_ERRORS as exc:
                self._lost.set()
                message = f"Server {self.name!r} connection lost: {exc!r}"
                raise UpstreamError(message, server=self.name) from None
        # Like a local function's: a result the model reads; the server is still there.
        return ToolResult.error(f"Tool {name!r} timed out after {self.timeout:g} s.")

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the first connection outcome; True when the server is up."""
        with anyio.move_on_after(timeout if timeout is not None else self.connect_timeout + 1):
            await self._first_outcome.wait()
        return self.status == "up"

    async def __aenter__(self) -> Self:
        self._tg, self._stopping = anyio.create_task_group(), anyio.CancelScope()
        await self._tg.__aenter__()
        self._tg.start_soon(self._run, name=f"upstream {self.name}")
        return self

    def stop_soon(self) -> None:
        """Start stopping: the server's shutdown begins now; `__aexit__` waits for its end."""
        if self._stopping is not None:  # `_run`'s own scope: ``_tg``'s is the caller's too
            self._stopping.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self.stop_soon()
        tg, self._tg = self._tg, None
        if tg is not None:  # `_run` ends: its scope is cancelled
            # The body's exception is not the task group's: passed in, anyio would wrap it in an
            # ExceptionGroup and callers could no longer catch e.g. `ToolCollisionError`.
            await tg.__aexit__(None, None, None)
        self._client, self._pipe = None, None
        self.status = "stopped"
        return None

    async def _run(self) -> None:
        attempt = 0
        with self._stopping or anyio.CancelScope():
            while True:
                try:
                    await self._session()
                except Exception as exc:  # any failure of the upstream means: retry later
                    await self._set_status("reconnecting" if attempt else "down", _describe(exc))
                finally:
                    self._client, self._pipe = None, None
                    self._first_outcome.set()
                attempt = 0 if self._was_up else attempt + 1
                delay = min(self._max_backoff, 0.25 * math.pow(2, min(attempt, 10)))
                await anyio.sleep(delay * (0.5 + random.random() / 2))

    async def _session(self) -> None:
        self._lost = anyio.Event()
        self._was_up = False
        with anyio.CancelScope() as connecting:
            connecting.deadline = anyio.current_time() + self.connect_timeout
            target = self._target()
            lost = self._lost
            stdio = isinstance(target, StdioServerParameters)
            pipe = (
                StdioPipe(
                    target, name=self.name, max_message=self.max_result_bytes, on_exit=lost.set
                )
                if stdio
                else None
            )
            transport = pipe.transport() if pipe is not None else target
            async with Client(
                transport,
                mode=self.mode,
                message_handler=self._on_message,
                **self.requests.callbacks(),
            ) as client:
                self.protocol_version = client.protocol_version
                async with anyio.create_task_group() as tg:
                    self._stale = anyio.Event()
                    tg.start_soon(self._refresher, client)
                    if _listens(client):  # subscribed before listing: no change falls between
                        await tg.start(self._listen, client)
                    await self._refresh(client)
                    await self.requests.apply_log_level(client)
                    connecting.deadline = math.inf
                    self._client, self._pipe, self._was_up = client, pipe, True
                    self._gone = False
                    await self._set_status("up", f"protocol {client.protocol_version}")
                    reopened, self._reopened = self._reopened, None
                    if reopened is not None:
                        reopened.set()
                    self._first_outcome.set()
                    await self._lost.wait()
                    tg.cancel_scope.cancel()
                self._client, self._pipe = None, None
        if connecting.cancelled_caught:
            raise TimeoutError(f"no connection within {self.connect_timeout:g} s")
        raise ConnectionError("connection lost")

    async def _refresh(self, client: Client) -> None:
        tools: dict[str, ToolDef] = {}
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                converted = tool_def_from_mcp(
                    tool, server=self.name, max_description=self.max_description
                )
                if converted is not None:
                    tools[converted.name] = converted
                    if converted.flags and converted.name not in self._tools:
                        log.warning(
                            "server %s: tool %r is flagged: %s",
                            self.name,
                            converted.name,
                            ", ".join(converted.flags),
                        )
            cursor = page.next_cursor
            if cursor is None:
                break
        self._tools = tools
        self._version += 1

    async def _refresher(self, client: Client) -> None:
        """Re-list after list_changed: however many arrive during a re-list, one more follows
        (a flood of notifications costs two listings, not one per notification)."""
        while True:
            await self._stale.wait()
            self._stale = anyio.Event()
            await self._refresh(client)
            if self._on_tools_changed is not None:
                await self._on_tools_changed(self.name)

    def _changed(self) -> None:
        self._stale.set()

    async def _on_message(self, message: Any) -> None:
        client = self._client
        # Modern connections also see listen events here; those are handled by `_listen`.
        if (
            isinstance(message, types.ToolListChangedNotification)
            and client is not None
            and client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            self._changed()
        elif isinstance(message, Exception):
            log.debug("upstream %s sent an error: %r", self.name, message)
        elif not isinstance(message, types.ToolListChangedNotification):
            for listener in list(self.notification_listeners):
                await listener(self.name, message)

    async def _listen(
        self, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Follow list_changed; started once the server acknowledged the subscription."""
        started = False
        try:
            caps = client.server_capabilities  # their events reach `_on_message`, as in legacy
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=_announces(caps.prompts),
                resources_list_changed=_announces(caps.resources),
            ) as subscription:
                task_status.started()
                started = True
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._changed()
        except Exception as exc:  # the listen stream is best effort; calls still work
            log.warning("upstream %s: subscriptions/listen ended: %s", self.name, _describe(exc))
        if not started:
            task_status.started()

    async def set_log_level(self, level: LoggingLevel | None) -> None:
        """Ask for log messages at ``level`` and up (None: none, as far as the era allows)."""
        self.requests.log_level = level
        await self.requests.apply_log_level(self._client)

    async def _set_status(self, status: UpstreamStatus, detail: str) -> None:
        self.status, self.detail = status, detail
        await self._on_status(self.name, status, detail)


def _listens(client: Client) -> bool:
    caps = client.server_capabilities
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    return modern and any(_announces(c) for c in (caps.tools, caps.prompts, caps.resources))


def _announces(capability: Any) -> bool:
    return capability is not None and bool(capability.list_changed)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
