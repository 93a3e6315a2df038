"""`CatalogueWatch`: tells who listens that the catalogue a gateway serves changed."""

from __future__ import annotations

import logging

from gateway.events import tool_events as event_types
from gateway.events.bus import EventBus
from gateway.runtime.readiness import Readiness
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.context import CallContext
from toolsets.errors import ToolCollisionError

__all__ = ["CatalogueWatch"]

log = logging.getLogger("lockgate")


class CatalogueWatch:
    """Each change of the served catalogue becomes a ``tools.changed`` event (what changed, by
    pin) and, once anyone has listed, a call of every listener (the faces' list_changed).

    Args:
        served: The served catalogue (below the policy: every tool, by exposed name).
        bus: Where the ``tools.changed`` events go.
        readiness: Whether anyone has listed yet.
    """

    def __init__(self, served: Toolset, bus: EventBus, readiness: Readiness) -> None:
        self._served = served
        self._bus = bus
        self._readiness = readiness
        self._pins: dict[str, str] = {}
        self._listeners: list[ToolsChangedHandler] = []

    def on_tools_changed(self, handler: ToolsChangedHandler) -> None:
        """Call ``handler`` whenever the served catalogue (or what the policy shows) changed."""
        self._listeners.append(handler)

    async def changed(self, source: str) -> None:
        """The catalogue may have changed because of ``source`` (a server's name): publish what
        changed, then tell the listeners."""
        try:
            tools = await self._served.get_tools(CallContext())
        except ToolCollisionError as exc:  # a first catalogue that collides: listings say so
            log.error("upstream %s: %s", source, exc)
            return
        pins = {name: tool.pin for name, tool in tools.items()}
        event = event_types.tools_changed(self._pins, pins, server=source)
        self._pins = pins
        if event is not None:
            self._bus.publish(event)
        if self._readiness.warm:  # else nobody has listed yet: the first listing shows it all
            await self.tell(source)

    async def tell(self, source: str) -> None:
        """Tell every listener that what clients see may have changed (``source``: a server's
        name, or ``policy`` after a reload)."""
        for listener in list(self._listeners):
            await listener(source)
