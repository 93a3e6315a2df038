"""`Closing`: the gateway is stopping. A call held open then is released at once, answered
"pending" (it stays pending in the store for the restart), instead of being cut by the HTTP
server's shutdown timeout with a traceback."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import anyio

__all__ = ["Closing"]


class Closing:
    """Whether the gateway is stopping, and the held waits to release when it does."""

    def __init__(self) -> None:
        self._closing = False
        self._waits: set[anyio.CancelScope] = set()

    def __bool__(self) -> bool:
        return self._closing

    def close(self) -> None:
        """The gateway stops: release every held wait (callable from a signal handler in the
        event loop's thread)."""
        self._closing = True
        for scope in list(self._waits):
            scope.cancel()

    @contextlib.contextmanager
    def released_on_close(self) -> Iterator[anyio.CancelScope]:
        """A scope around a held wait, cancelled (quietly, at its end) when the gateway stops."""
        with anyio.CancelScope() as scope:
            if self._closing:
                scope.cancel()
            self._waits.add(scope)
            try:
                yield scope
            finally:
                self._waits.discard(scope)
