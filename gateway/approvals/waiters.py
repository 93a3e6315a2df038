"""`Waiters`: the tasks of this process waiting on a pending call, woken when it may change."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import anyio

__all__ = ["Waiters"]


class Waiters:
    """One `anyio.Event` per waiting task, by call id; a wake-up sets (and forgets) them all."""

    def __init__(self) -> None:
        self._events: dict[str, set[anyio.Event]] = {}
        self.observers: list[Callable[[str | None], None]] = []
        """Told of every wake-up, waited on or not: the call's id, or None when changes may
        have been missed (e.g. the connect gate's index of held records)."""

    @contextlib.contextmanager
    def watching(self, id: str) -> Iterator[anyio.Event]:
        """An event set at the next `wake` of ``id`` (watch first, then read the record)."""
        event = anyio.Event()
        self._events.setdefault(id, set()).add(event)
        try:
            yield event
        finally:
            events = self._events.get(id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._events[id]

    def wake(self, id: str) -> None:
        """``id`` changed (here or, as a notification says, elsewhere): its waiters read again."""
        self._tell(id)
        for event in self._events.pop(id, set()):
            event.set()

    def wake_all(self) -> None:
        """Changes may have been missed: every waiter reads again."""
        self._tell(None)
        for events in [self._events.pop(id) for id in list(self._events)]:
            for event in events:
                event.set()

    def _tell(self, id: str | None) -> None:
        for observer in self.observers:
            observer(id)
