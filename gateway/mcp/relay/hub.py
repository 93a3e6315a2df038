"""`Relay`: what the gateway relays between its upstreams and its downstream clients beyond
tool calls: an upstream's requests to the client (parked 2026-07-28 calls) and log messages."""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from gateway.mcp.relay.logs import LogRelay, LogSource
from gateway.mcp.relay.parking import Parking

__all__ = ["Relay"]


class Relay:
    """The gateway's relay; an async context manager entered with the gateway.

    Attributes:
        parking: 2026-07-28 calls waiting for their client's answers to an upstream.
        logs: Log levels asked downstream and the relay of upstream log messages.

    Args:
        upstreams: Every upstream session's source: the servers, and the pools of
            per-principal sessions.
    """

    def __init__(self, upstreams: Iterable[LogSource]) -> None:
        self.parking = Parking()
        self.logs = LogRelay(upstreams)

    async def __aenter__(self) -> Relay:
        await self.parking.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self.parking.__aexit__(exc_type, exc, tb)
