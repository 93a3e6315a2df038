"""What the gateway knows of each handshake-era HTTP session, learned from its requests."""

from __future__ import annotations

from dataclasses import dataclass

from toolsets.context import ClientInfo

__all__ = ["LegacySession", "LegacySessions"]


@dataclass(frozen=True, slots=True)
class LegacySession:
    """One 2025-11-25 session: who opened it and what its client declared at ``initialize``."""

    principal_id: str
    client: ClientInfo


class LegacySessions:
    """Sessions by ``Mcp-Session-Id``, bounded (the oldest are forgotten first).

    Only a cache: the SDK's session manager stays the authority on which sessions are open.
    """

    def __init__(self, limit: int = 10_000) -> None:
        self._limit = limit
        self._sessions: dict[str, LegacySession] = {}

    def learn(self, session_id: str, principal_id: str, client: ClientInfo) -> None:
        """Remember what ``session_id`` is, the first time it is seen: the session belongs to
        the principal that used it first, whoever uses it later."""
        if session_id in self._sessions:
            return
        if len(self._sessions) >= self._limit:
            self._sessions.pop(next(iter(self._sessions)))
        self._sessions[session_id] = LegacySession(principal_id, client)

    def get(self, session_id: str) -> LegacySession | None:
        """What is known of ``session_id``, if anything."""
        return self._sessions.get(session_id)
