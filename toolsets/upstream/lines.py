"""`BoundedLines`: newline-delimited messages from a pipe, each at most a given size.

A line over the limit is never held whole: its first bytes are kept (to read its JSON-RPC id)
and the rest is discarded as it arrives, so memory stays bounded whatever the server sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from toolsets import jsonwire

__all__ = ["HEAD", "BoundedLines", "Oversized", "request_id_of"]

HEAD: Final = 512
"""Bytes kept of an oversized line: enough for ``{"jsonrpc": "2.0", "id": ...``."""
_ID: Final = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the limit: its first bytes and its full size."""

    head: bytes
    size: int


class BoundedLines:
    """Splits a byte stream into lines of at most ``limit`` bytes (see the module docstring)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []  # the current line's chunks: joined once, not per chunk
        self._size = 0
        self._head: bytes | None = None  # set while discarding an oversized line

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines ``chunk`` completes, in order."""
        out: list[bytes | Oversized] = []
        *complete, rest = chunk.split(b"\n")
        for piece in complete:
            self._add(piece)
            out.append(self._finish())
        self._add(rest)
        return out

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._head is not None:
            return
        self._parts.append(piece)
        if self._size > self.limit:
            self._head = b"".join(self._parts)[:HEAD]
            self._parts.clear()

    def _finish(self) -> bytes | Oversized:
        line: bytes | Oversized
        if self._head is not None:
            line = Oversized(self._head, self._size)
        else:
            line = b"".join(self._parts)
        self._parts, self._size, self._head = [], 0, None
        return line


def request_id_of(head: bytes) -> str | int | None:
    """The JSON-RPC id near the start of a message, if it can be read there."""
    match = _ID.search(head)
    if match is None:
        return None
    value = jsonwire.loads(match.group(1))
    return value if isinstance(value, str | int) else None
