"""`UpstreamSignals`: what every upstream tells the gateway, passed on to the parts following it."""

from __future__ import annotations

from toolsets.abstract import ToolsChangedHandler
from toolsets.upstream.server import StatusHandler, UpstreamStatus

__all__ = ["UpstreamSignals"]


class UpstreamSignals:
    """The handlers every upstream is built with: its tool list changed, its status changed.

    The upstreams sit inside the catalogue that the followers read, so they are built first and
    report here; each follower subscribes with `follow` as it is built, before anything starts.
    """

    def __init__(self) -> None:
        self._changed: list[ToolsChangedHandler] = []
        self._status: list[StatusHandler] = []

    def follow(
        self, *, changed: ToolsChangedHandler | None = None, status: StatusHandler | None = None
    ) -> None:
        """Tell ``changed`` of every upstream's tool list change, ``status`` of every status."""
        if changed is not None:
            self._changed.append(changed)
        if status is not None:
            self._status.append(status)

    async def tools_changed(self, source: str) -> None:
        """Server ``source`` sent ``tools/list_changed`` (or its catalogue changed on reconnect)."""
        for handler in list(self._changed):
            await handler(source)

    async def status(self, server: str, status: UpstreamStatus, detail: str) -> None:
        """``server`` is ``up``, ``down`` or ``reconnecting`` (``detail`` says why)."""
        for handler in list(self._status):
            await handler(server, status, detail)
