"""`PinFollower`: brings pin changes other processes record in the shared store into a serving
gateway (a ``lockgate call`` or ``lockgate tools`` on the same config that re-listed an upstream
and quarantined a change, an acceptance by ``lockgate pins accept``, another replica).

Two routes tell it to look: the store itself (`PinStore.changed`: SQLite polls
``PRAGMA data_version`` every half second) and, with PostgreSQL, the cluster's event log
(``tool.pin_changed`` and ``tool.pin_accepted`` from every replica). Either way it compares the
store with the pins this process holds; for each server that differs it lists the upstream's
tools again (so this process reviews the definition the store speaks of, not a stale one),
takes the stored pins (`ToolPins.adopt`), and tells the catalogue, whose listeners re-list. A
change is served (or held) here within about a second with SQLite, a fraction with PostgreSQL.
Nothing is read on the call path.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import anyio

from gateway.events.bus import EventBus
from gateway.events.model import Event
from gateway.pins.guard import ToolPins
from toolsets.upstream.server import MCPServerToolset

__all__ = ["PinFollower"]

log = logging.getLogger("lockgate.pins")

_RELIST_TIMEOUT: Final = 10.0
"""Seconds a re-list of one upstream may take before the stored pins are taken anyway."""
_SAVED_WAIT: Final = 5.0
"""Seconds an acceptance announced elsewhere may take to show in the store."""
_RETRY: Final = 1.0
"""Seconds before looking again after the store could not be read."""

Changed = Callable[[str], Awaitable[None]]
"""Told the name of a server whose tools may now be served differently."""


class PinFollower:
    """Follows the shared pin store for as long as `run` runs.

    Args:
        pins: This process's pins.
        upstreams: The upstream servers, by name (re-listed when their pins changed).
        changed: Told each server whose pins changed (the catalogue reviews and tells clients).
        events: The cluster's event stream, when replicas share one (PostgreSQL).
    """

    def __init__(
        self,
        pins: ToolPins,
        upstreams: Mapping[str, MCPServerToolset],
        *,
        changed: Changed,
        events: EventBus | None = None,
    ) -> None:
        self._pins = pins
        self._upstreams = upstreams
        self._changed = changed
        self._events = events
        self._lock = anyio.Lock()

    async def run(self) -> None:
        """Follow until cancelled; a store that cannot be read is tried again."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._follow_store)
            if self._events is not None:
                tg.start_soon(self._follow_events, self._events)

    async def catch_up(self) -> frozenset[str]:
        """Take what other processes changed in the store; the servers it concerned."""
        async with self._lock:
            servers = await self._pins.changed_elsewhere()
            if not servers:
                return servers
            log.info("pins of %s changed elsewhere; listing again", ", ".join(sorted(servers)))
            for server in servers:
                await self._relist(server)
            await self._pins.adopt()
        for server in servers:
            await self._changed(server)
        return servers

    async def _follow_store(self) -> None:
        while True:
            try:
                await self._pins.store.changed()
                await self.catch_up()
            except Exception as exc:  # an outage: fail closed is the pins' own; look again
                log.warning("pins not followed: %r", exc)
                await anyio.sleep(_RETRY)

    async def _follow_events(self, events: EventBus) -> None:
        patterns = ["tool.pin_changed", "tool.pin_accepted"]
        async with events.subscribe(patterns, name="pins") as changes:
            async for event in changes:
                try:
                    await self._saved(event)
                    await self.catch_up()
                except Exception as exc:
                    log.warning("pins not followed after %s: %r", event.type, exc)

    async def _saved(self, event: Event) -> None:
        """Wait (bounded) until the store shows an acceptance (by an approver or by
        ``pins.on_change``): it is put on record before it is saved. A quarantine is saved
        before it is announced."""
        data, pin = event.data, event.data.get("changed_pin")
        if data.get("action") == "quarantine" or not isinstance(pin, str):
            return
        server, tool, pause = str(data.get("server")), str(data.get("tool")), 0.02
        with anyio.move_on_after(_SAVED_WAIT):
            while not await self._pins.shows(server, tool, pin):
                await anyio.sleep(pause)
                pause = min(pause * 2, 0.5)

    async def _relist(self, server: str) -> None:
        upstream = self._upstreams.get(server)
        client = upstream.client if upstream is not None else None
        if upstream is None or client is None:  # down: it lists again when it is back
            return
        try:
            with anyio.fail_after(_RELIST_TIMEOUT):
                await upstream.catalogue.refresh(client)
        except Exception as exc:
            log.warning("upstream %s not listed again: %r", server, exc)
