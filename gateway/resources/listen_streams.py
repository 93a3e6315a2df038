"""`SessionListen`: 2026-07-28 ``subscriptions/listen`` streams, grouped by session.

Each stream is served by the SDK's `ListenHandler` on the bus of its session (its principal and
session key, as `gateway.sessions.session_key` reads them), so a change to what one session may
see reaches that session's streams only; a catalogue change reaches every stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent
from mcp_types import SubscriptionsListenRequestParams, SubscriptionsListenResult

__all__ = ["SessionListen"]

Key = tuple[str, str | None]
"""A session: principal id and session key."""


class SessionListen:
    """The listen handler of the downstream server; ``key_of`` names a request's session."""

    def __init__(self, key_of: Callable[[Any], Key]) -> None:
        self._key_of = key_of
        self._buses: dict[Key, InMemorySubscriptionBus] = {}
        self._streams: dict[Key, int] = {}

    async def __call__(
        self, ctx: Any, params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        key = self._key_of(ctx)
        bus = self._buses.setdefault(key, InMemorySubscriptionBus())
        self._streams[key] = self._streams.get(key, 0) + 1
        try:
            return await ListenHandler(bus)(ctx, params)
        finally:
            self._streams[key] -= 1
            if not self._streams[key]:
                del self._streams[key], self._buses[key]

    async def publish(self, event: ServerEvent, key: Key | None = None) -> None:
        """Send ``event`` to the streams of session ``key`` (every stream when None)."""
        buses = [self._buses[key]] if key in self._buses else []
        for bus in list(self._buses.values()) if key is None else buses:
            await bus.publish(event)
