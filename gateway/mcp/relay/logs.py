"""`LogRelay`: upstream log messages (``notifications/message``) to the downstream sessions
that asked for them, each at its own level, tagged with the server.

2025-11-25 sessions ask with ``logging/setLevel``, for the whole session. Upstream sessions are
shared by downstream sessions (a server's one session, or each principal's own), so each is asked
for the most verbose level any session asked (2025-11-25 upstreams with ``logging/setLevel``,
2026-07-28 upstreams on every call, see `toolsets.upstream.client_requests`), and each message goes
only to the sessions whose level it passes. 2026-07-28 clients ask per request (``_meta``
``io.modelcontextprotocol/logLevel``): a message reaches such a request while its call is in
progress on that server. A message is tagged with its server: ``logger`` is ``server`` or
``server/<the upstream's logger>``.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp_types import LoggingLevel

from toolsets import _sdk_compat as sdk
from toolsets.upstream.client_requests import PrincipalLogHandler
from toolsets.upstream.peer import ClientPeer, at_least, most_verbose

__all__ = ["DELIVERY_TIMEOUT", "LogRelay", "LogSource", "tagged"]

log = logging.getLogger("lockgate.relay")
DELIVERY_TIMEOUT = 5.0
"""Seconds one delivery to a session may take; a session that does not read loses it."""


def tagged(
    server: str, params: types.LoggingMessageNotificationParams
) -> types.LoggingMessageNotificationParams:
    """``params`` with the server named in ``logger``."""
    logger = f"{server}/{params.logger}" if params.logger else server
    return params.model_copy(update={"logger": logger})


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a downstream session asked with ``logging/setLevel``, and whose it is."""

    level: LoggingLevel
    principal: str | None


class LogSource(Protocol):
    """Upstream sessions whose log messages are relayed: one server's
    (`toolsets.upstream.server.MCPServerToolset`), or each principal's own sessions of one
    (`toolsets.upstream.per_principal.PerPrincipalToolset`)."""

    def follow_logs(self, handler: PrincipalLogHandler) -> None:
        """Send the sessions' log messages to ``handler``."""
        ...

    async def set_log_level(self, level: LoggingLevel | None) -> None:
        """Ask the sessions for log messages at ``level`` and up."""
        ...


class LogRelay:
    """Log levels the downstream sessions asked for, and the relay of upstream log messages
    (see the module docstring).

    Args:
        upstreams: Every upstream session's source, each told the level wanted of it.
    """

    def __init__(self, upstreams: Iterable[LogSource]) -> None:
        self._upstreams = list(upstreams)
        self._sessions: weakref.WeakKeyDictionary[Connection, _Asked] = weakref.WeakKeyDictionary()
        self._wanted: LoggingLevel | None = None
        self._telling = anyio.Lock()  # one at a time: the last one tells the current state
        self._delivering = 0
        self._idle = anyio.Event()
        for upstream in self._upstreams:
            upstream.follow_logs(self.relay)

    async def set_level(
        self,
        ctx: ServerRequestContext[Any],
        params: types.SetLevelRequestParams,
        *,
        principal: str | None = None,
    ) -> types.EmptyResult:
        """The ``logging/setLevel`` handler of the downstream server; ``principal``: the
        session's (a `principal_key`), whose own upstream sessions' messages it may get."""
        connection = sdk.session_connection(ctx.session)
        if connection is not None:
            if connection not in self._sessions:  # its end may lower what upstreams are asked
                connection.exit_stack.push_async_callback(self._ended, connection)
            self._sessions[connection] = _Asked(params.level, principal)
        await self._tell_upstreams()
        return types.EmptyResult()

    async def _ended(self, connection: Connection) -> None:
        self._sessions.pop(connection, None)
        await self._tell_upstreams()

    async def _tell_upstreams(self) -> None:
        """Ask every upstream for the most verbose level a live session wants, when it changed
        (None: no session wants any; 2026-07-28 upstreams are then asked for none)."""
        async with self._telling:
            wanted = most_verbose(asked.level for asked in self._sessions.values())
            if wanted == self._wanted:
                return
            self._wanted = wanted
            async with anyio.create_task_group() as tg:
                for upstream in self._upstreams:
                    tg.start_soon(upstream.set_log_level, wanted)

    async def relay(
        self,
        server: str,
        params: types.LoggingMessageNotificationParams,
        peers: Sequence[ClientPeer],
        principal: str | None = None,
    ) -> None:
        """Deliver ``server``'s log message to the sessions and calls in progress that asked;
        from ``principal``'s own upstream session, to that principal's sessions only."""
        self._delivering += 1
        try:
            await self._relay(tagged(server, params), peers, principal)
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
        self,
        message: types.LoggingMessageNotificationParams,
        peers: Sequence[ClientPeer],
        principal: str | None,
    ) -> None:
        wire = message.model_dump(by_alias=True, mode="json", exclude_none=True)
        for connection, asked in list(self._sessions.items()):
            if principal is not None and asked.principal != principal:
                continue  # another principal's own upstream session
            if at_least(message.level, asked.level):
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
