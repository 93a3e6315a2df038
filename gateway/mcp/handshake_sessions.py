"""What the gateway knows of each handshake-era HTTP session's client, learned from its requests."""

from __future__ import annotations

from toolsets.context import ClientInfo

__all__ = ["LegacySessions"]


class LegacySessions:
    """What each 2025-11-25 session's client declared at ``initialize``, by ``Mcp-Session-Id``;
    bounded (the oldest are forgotten first).

    Only a cache of client facts: the SDK's session manager stays the authority on which
    sessions are open and on who owns each (the credential that opened it).
    """

    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._clients: dict[str, ClientInfo] = {}

    def learn(self, session_id: str, client: ClientInfo) -> None:
        """Remember what ``session_id``'s client is, the first time it is seen."""
        if session_id in self._clients:
            return
        if len(self._clients) >= self._limit:
            self._clients.pop(next(iter(self._clients)))
        self._clients[session_id] = client

    def get(self, session_id: str) -> ClientInfo | None:
        """What is known of ``session_id``'s client, if anything."""
        return self._clients.get(session_id)
