"""``listen``: where the HTTP face listens, and the hosts and browser origins it accepts."""

from __future__ import annotations

from pydantic import Field

from gateway.config._strict import Strict

__all__ = ["LOOPBACK_HOSTS", "ListenConfig"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""Listen hosts that only this machine reaches (beyond them, every client must authenticate)."""


class ListenConfig(Strict):
    """Where the HTTP face listens. Loopback by default."""

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values accepted besides loopback names.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="Browser origins allowed to call the gateway."
    )
