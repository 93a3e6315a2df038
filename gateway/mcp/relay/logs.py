"""`LogRelay`: upstream log messages (``notifications/message``) to the downstream sessions
that asked for them, each at its own level, tagged with the server.

2025-11-25 sessions ask with ``logging/setLevel``, for the whole session. Upstream sessions are
shared by every downstream session, so each upstream is asked for the most verbose level any
session asked (2025-11-25 upstreams with ``logging/setLevel``, 2026-07-28 upstreams on every
call, see `toolsets.upstream.client_requests`), and each message goes only to the sessions whose
level it passes. 2026-07-28 clients ask per request (``_meta``
``io.modelcontextprotocol/logLevel``): a message reaches such a request while its call is in
progress on that server. A message is tagged with its server: ``logger`` is ``server`` or
``server/<the upstream's logger>``.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types import LoggingLevel

from toolsets import _sdk_compat as sdk
from toolsets.upstream.peer import ClientPeer, at_least, most_verbose
from toolsets.upstream.server import MCPServerToolset

__all__ = ["DELIVERY_TIMEOUT", "LogRelay", "tagged"]

log = logging.getLogger("lockgate.relay")
DELIVERY_TIMEOUT = 5.0
"""Seconds one delivery to a session may take; a session that does not read loses it."""


def tagged(
    server: str, params: types.LoggingMessageNotificationParams
) -> types.LoggingMessageNotificationParams:
    """``params`` with the server named in ``logger``."""
    logger = f"{server}/{params.logger}" if params.logger else server
    return params.model_copy(update={"logger": logger})


class LogRelay:
    """Log levels the downstream sessions asked for, and the relay of upstream log messages
    (see the module docstring).

    Args:
        upstreams: The upstream servers by name, each told the level wanted of it.
    """

    def __init__(self, upstreams: Mapping[str, MCPServerToolset]) -> None:
        self._upstreams = upstreams
        self._sessions: weakref.WeakKeyDictionary[Connection, LoggingLevel] = (
            weakref.WeakKeyDictionary()
        )
        self._wanted: LoggingLevel | None = None
        self._telling = anyio.Lock()  # one at a time: the last one tells the current state
        self._delivering = 0
        self._idle = anyio.Event()
        for upstream in upstreams.values():
            upstream.requests.on_log = self.relay

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The ``logging/setLevel`` handler of the downstream server."""
        connection = sdk.session_connection(ctx.session)
        if connection is not None:
            if connection not in self._sessions:  # its end may lower what upstreams are asked
                connection.exit_stack.push_async_callback(self._ended, connection)
            self._sessions[connection] = params.level
        await self._tell_upstreams()
        return types.EmptyResult()

    async def _ended(self, connection: Connection) -> None:
        self._sessions.pop(connection, None)
        await self._tell_upstreams()

    async def _tell_upstreams(self) -> None:
        """Ask every upstream for the most verbose level a live session wants, when it changed
        (None: no session wants any; 2026-07-28 upstreams are then asked for none)."""
        async with self._telling:
            wanted = most_verbose(self._sessions.values())
            if wanted == self._wanted:
                return
            self._wanted = wanted
            async with anyio.create_task_group() as tg:
                for upstream in self._upstreams.values():
                    tg.start_soon(upstream.set_log_level, wanted)

    async def relay(
        self,
        server: str,
        params: types.LoggingMessageNotificationParams,
        peers: Sequence[ClientPeer],
    ) -> None:
        """Deliver ``server``'s log message to the sessions and calls in progress that asked."""
        self._delivering += 1
        try:
            await self._relay(tagged(server, params), peers)
        finally:
            self._delivering -= 1
            if not self._delivering:
                self._idle.set()

    async def delivered(self) -> None:
        """Wait until the messages being delivered now are delivered: a call's own log messages
        reach its request before its result does (they were received before the result)."""
        while self._delivering:
            if self._idle.is_set():
                self._idle = anyio.Event()
            await self._idle.wait()

    async def _relay(
        self, message: types.LoggingMessageNotificationParams, peers: Sequence[ClientPeer]
    ) -> None:
        wire = message.model_dump(by_alias=True, mode="json", exclude_none=True)
        for connection, level in list(self._sessions.items()):
            if at_least(message.level, level):
                await self._deliver(connection.notify("notifications/message", wire))
        for peer in peers:
            if peer.log_level is not None and at_least(message.level, peer.log_level):
                await self._deliver(peer.log(message))

    async def _deliver(self, sending: Awaitable[None]) -> None:
        with anyio.move_on_after(DELIVERY_TIMEOUT):
            try:
                await sending
            except Exception as exc:  # a gone session must not stop the others
                log.debug("log message not delivered: %r", exc)
