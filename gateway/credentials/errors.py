"""The errors of per-caller upstream credentials: each names the server and what to do, never a
token."""

from __future__ import annotations

from toolsets.errors import LockgateError

__all__ = ["ConnectError", "NeedsReconnect", "NoConnectFlow"]


class ConnectError(LockgateError):
    """A connect flow cannot start or finish (the authorization server is down, the state is
    unknown or expired, the code was refused)."""

    def __init__(self, server: str, problem: str) -> None:
        super().__init__(
            f"connecting to {server!r} failed: {problem}; run `lockgate connections connect "
            f"{server}` to try again"
        )
        self.server = server


class NeedsReconnect(LockgateError):
    """A principal's connection can no longer be used (refresh refused, grant revoked upstream,
    a larger scope needed): the user has to connect again."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(
            f"your connection to {server!r} needs to be made again ({reason}): run `lockgate "
            f"connections connect {server}`, then call again"
        )
        self.server, self.reason = server, reason


class NoConnectFlow(LockgateError):
    """The server's credentials mode has no browser flow (``secret``: the user sets it)."""

    def __init__(self, server: str, mode: str) -> None:
        super().__init__(
            f"{server!r} is in credentials mode {mode!r}, which has no connect URL: set the "
            f"secret with `lockgate connections set {server}`"
        )
        self.server, self.mode = server, mode
