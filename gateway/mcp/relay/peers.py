"""The downstream request a call came on, as the `ClientPeer` its upstream reaches (SDK path)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.message import ServerMessageMetadata
from mcp_types import LOG_LEVEL_META_KEY, LoggingLevel, RequestId

from toolsets.context import ClientInfo
from toolsets.upstream.peer import LOG_LEVELS, result_type_of

__all__ = ["RequestPeer", "declared", "log_level_of", "named", "request_peer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestPeer:
    """The client of one request served by the SDK: asked over the request's own channel
    (2025-11-25: the session's back-channel, tied to the request, so over HTTP the request's
    response stream), told log messages on it (2026-07-28: at the level its ``_meta`` asked).
    """

    session: ServerSession
    request_id: RequestId
    log_level: LoggingLevel | None = None

    async def request(self, request: types.InputRequest) -> types.InputResponse:
        """Ask the client over the back-channel.

        Raises:
            MCPError: the client answered with an error.
        """
        metadata = ServerMessageMetadata(related_request_id=self.request_id)
        result: types.InputResponse = await self.session.send_request(
            request, result_type_of(request), metadata=metadata
        )
        return result

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        """A log message on the request's stream."""
        notification = types.LoggingMessageNotification(params=params)
        await self.session.send_notification(notification, related_request_id=self.request_id)


def log_level_of(meta: Mapping[str, Any] | None) -> LoggingLevel | None:
    """The log level a 2026-07-28 request's ``_meta`` opted in to, if any."""
    level = meta.get(LOG_LEVEL_META_KEY) if meta else None
    return next((known for known in LOG_LEVELS if known == level), None)


def declared(caps: Any) -> dict[str, bool]:
    """`ClientInfo`'s capability fields for declared client capabilities (a model or wire
    JSON, None when none were declared); ``elicitation_url``: URL-mode elicitation."""
    if isinstance(caps, types.ClientCapabilities):
        caps = caps.model_dump(exclude_none=True)
    if not isinstance(caps, dict):
        caps = {}
    found = {name: caps.get(name) is not None for name in ("elicitation", "sampling", "roots")}
    elicitation = caps.get("elicitation")
    found["elicitation_url"] = isinstance(elicitation, dict) and elicitation.get("url") is not None
    return found


def named(info: Any) -> tuple[str | None, str | None]:
    """`ClientInfo`'s ``name`` and ``version`` from a client's ``clientInfo`` (a model or wire
    JSON; None when it gave none), each cut to 100 characters."""
    if isinstance(info, types.Implementation):
        info = info.model_dump()
    if not isinstance(info, dict):
        return None, None
    return _short(info.get("name")), _short(info.get("version"))


def _short(value: Any) -> str | None:
    return value[:100] if isinstance(value, str) else None


def request_peer(ctx: ServerRequestContext[Any], client: ClientInfo) -> RequestPeer | None:
    """The peer of a call served by the SDK: for a 2025-11-25 client that declared something
    an upstream may ask, or a 2026-07-28 request that asked for log messages; else None."""
    level = log_level_of(ctx.meta) if client.era == "modern" else None
    if ctx.request_id is None or (level is None and not (client.era == "legacy" and client.relays)):
        return None
    return RequestPeer(session=ctx.session, request_id=ctx.request_id, log_level=level)
