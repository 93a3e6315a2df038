"""`ClientPeer`: the downstream client a call came from, as the call's upstream may reach it.

An upstream serving a call may ask the client something (``elicitation/create``,
``sampling/createMessage``, ``roots/list``) and may send log messages. The faces that carry a
call (gateway/relay) hand a `ClientPeer` down with it in `CallContext.peer`; the upstream
toolset (`toolsets.upstream.client_requests`) decides whose call a request belongs to and asks that
peer. Log levels follow MCP's RFC 5424 scale, least severe first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, get_args

import mcp_types as types
from mcp_types import LoggingLevel

__all__ = [
    "LOG_LEVELS",
    "Capability",
    "ClientPeer",
    "ResultType",
    "at_least",
    "capability_of",
    "method_of",
    "most_verbose",
    "result_type_of",
]

Capability = Literal["elicitation", "sampling", "roots"]
"""The client capabilities an upstream's requests need."""

LOG_LEVELS: tuple[LoggingLevel, ...] = get_args(LoggingLevel)
"""Every log level, least severe (most verbose) first."""


class ClientPeer(Protocol):
    """The downstream client behind one call in progress.

    ``log_level`` is the level the call's request asked log messages at (the 2026-07-28
    per-request opt-in); None when it asked none (2025-11-25 sessions ask with
    ``logging/setLevel`` instead, for the whole session).
    """

    @property
    def log_level(self) -> LoggingLevel | None: ...

    async def request(self, request: types.InputRequest) -> types.InputResponse:
        """Ask the client ``request`` and return its answer.

        Raises:
            MCPError: the client answered with an error.
            RelayRefused: the request cannot reach the client.
        """
        ...

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """Deliver a log message to the client (best effort)."""
        ...


def capability_of(request: types.InputRequest) -> Capability:
    """The client capability ``request`` needs."""
    if isinstance(request, types.ElicitRequest):
        return "elicitation"
    if isinstance(request, types.CreateMessageRequest):
        return "sampling"
    return "roots"


def method_of(request: types.InputRequest) -> str:
    """The JSON-RPC method of ``request``, e.g. ``sampling/createMessage``."""
    return str(request.method)


ResultType = type[
    types.ElicitResult
    | types.ListRootsResult
    | types.CreateMessageResult
    | types.CreateMessageResultWithTools
]


def result_type_of(request: types.InputRequest) -> ResultType:
    """The result model a client's answer to ``request`` must match."""
    if isinstance(request, types.ElicitRequest):
        return types.ElicitResult
    if isinstance(request, types.ListRootsRequest):
        return types.ListRootsResult
    params = request.params
    if params.tools is not None or params.tool_choice is not None:
        return types.CreateMessageResultWithTools
    return types.CreateMessageResult


def at_least(level: LoggingLevel, threshold: LoggingLevel) -> bool:
    """Whether a message at ``level`` passes a ``threshold`` (as severe or more)."""
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)


def most_verbose(levels: Iterable[LoggingLevel | None]) -> LoggingLevel | None:
    """The least severe of ``levels`` (the one letting most messages through); None if none."""
    found = [LOG_LEVELS.index(level) for level in levels if level is not None]
    return LOG_LEVELS[min(found)] if found else None
