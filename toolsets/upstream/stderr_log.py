"""`StderrLog`: an upstream's stderr in the gateway's log, bounded.

An upstream may write anything to stderr, at any rate. Each line is logged with the server's
name, cut to `MAX_LINE` characters; at most `RATE` lines a second are logged, and the number of
lines dropped is logged once the second is over. The pipe is always drained, so a chatty server
never blocks on a full pipe.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable

import anyio

__all__ = ["MAX_LINE", "RATE", "StderrLog"]

log = logging.getLogger("lockgate.upstream.stderr")
MAX_LINE = 1000
"""Characters of a line that are logged; the rest is counted."""
RATE = 20
"""Lines a second that are logged per upstream."""


class StderrLog:
    """Logs one upstream's stderr (see the module docstring)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._line = bytearray()
        self._cut = 0
        self._window = 0.0
        self._logged = 0
        self._dropped = 0

    async def drain(self, stream: AsyncIterable[bytes]) -> None:
        """Read ``stream`` to its end, logging what the budget allows."""
        try:
            async for chunk in stream:
                self._feed(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:  # also when the session ends: what was dropped is said
            if self._line or self._cut:
                self._emit()
            self._flush_dropped()

    def _feed(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            self._add(piece)
            self._emit()
        self._add(rest)

    def _add(self, piece: bytes) -> None:
        room = MAX_LINE - len(self._line)
        self._line += piece[: max(room, 0)]
        self._cut += max(len(piece) - room, 0)

    def _emit(self) -> None:
        text = self._line.decode("utf-8", "replace").rstrip("\r")
        cut, self._line, self._cut = self._cut, bytearray(), 0
        now = anyio.current_time()
        if now - self._window >= 1.0:
            self._flush_dropped()
            self._window, self._logged = now, 0
        if self._logged >= RATE:
            self._dropped += 1
            return
        self._logged += 1
        suffix = f" ... ({cut} bytes cut)" if cut else ""
        log.info("upstream %s: %s%s", self.server, text, suffix)

    def _flush_dropped(self) -> None:
        if self._dropped:
            log.warning(
                "upstream %s: %d stderr lines not logged (more than %d a second)",
                self.server,
                self._dropped,
                RATE,
            )
            self._dropped = 0
