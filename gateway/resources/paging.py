"""Aggregated listings in pages: the upstreams one after the other, each page at most `PAGE_SIZE`.

A downstream cursor is opaque to the client and names a position in the aggregate: a server,
that server's own cursor for the page being read, and an offset into that page. Nothing is
cached: each page is read from the upstreams as they are now, so entries that appear or vanish
meanwhile are shown or skipped as with any paginated MCP server. A server that is down (or fails
to list) contributes nothing; one that did not declare the capability is never asked.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from gateway.resources.upstream import Listed, ListKind, UpstreamResources
from toolsets.errors import UpstreamError

__all__ = ["PAGE_SIZE", "Keep", "Position", "collect"]

log = logging.getLogger("lockgate.surface")
PAGE_SIZE = 100
"""The most entries of one downstream page."""
MAX_UPSTREAM_PAGES = 1000
"""The most pages read from one server per downstream page (a server whose cursors never end)."""
U = TypeVar("U")
Keep = Callable[[UpstreamResources, Any], U | None]
"""Maps one upstream entry to the one served, or None to skip it (hidden)."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where the next downstream page starts: ``server``'s page at ``cursor``, from ``offset``."""

    server: str
    cursor: str | None = None
    offset: int = 0

    def encode(self) -> str:
        """The opaque downstream cursor."""
        raw = json.dumps([self.server, self.cursor, self.offset], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode()

    @classmethod
    def decode(cls, cursor: str, servers: Sequence[str]) -> Position:
        """The position a downstream cursor names.

        Raises:
            MCPError: invalid params (as the spec asks for an invalid cursor).
        """
        try:
            server, own, offset = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        except (ValueError, TypeError, binascii.Error):
            server = None
        valid = server in servers and isinstance(own, str | None) and isinstance(offset, int)
        if not valid or isinstance(offset, bool) or offset < 0:
            raise MCPError(INVALID_PARAMS, f"Invalid cursor: {cursor[:100]!r}")
        return cls(server, own, offset)


async def collect(
    kind: ListKind,
    upstreams: Sequence[UpstreamResources],
    cursor: str | None,
    keep: Keep[U],
    *,
    page_size: int = PAGE_SIZE,
) -> tuple[list[U], str | None]:
    """One downstream page of ``kind``: entries kept by ``keep`` and the next cursor, if any.

    Raises:
        MCPError: ``cursor`` is not one this gateway made.
    """
    names = [upstream.name for upstream in upstreams]
    start = Position.decode(cursor, names) if cursor is not None else None
    entries: list[U] = []
    for upstream in upstreams[names.index(start.server) if start is not None else 0 :]:
        at = start if start is not None and upstream.name == start.server else None
        at = at or Position(upstream.name)
        stop = await _read(kind, upstream, at=at, keep=keep, entries=entries, page_size=page_size)
        if stop is not None:
            return entries, stop.encode()
    return entries, None


async def _read(
    kind: ListKind,
    upstream: UpstreamResources,
    *,
    at: Position,
    keep: Keep[U],
    entries: list[U],
    page_size: int,
) -> Position | None:
    """Add ``upstream``'s entries from ``at`` on to ``entries``; where to go on when full."""
    own, offset = at.cursor, at.offset
    for _ in range(MAX_UPSTREAM_PAGES):
        page, following = await _page(kind, upstream, own)
        for index in range(offset, len(page)):
            if len(entries) == page_size:
                return Position(upstream.name, own, index)
            kept = keep(upstream, page[index])
            if kept is not None:
                entries.append(kept)
        if following is None:
            return None
        own, offset = following, 0
    log.warning("server %s: %s listing cut after %d pages", upstream.name, kind, MAX_UPSTREAM_PAGES)
    return None


async def _page(
    kind: ListKind, upstream: UpstreamResources, cursor: str | None
) -> tuple[Sequence[Listed], str | None]:
    try:
        return await upstream.page(kind, cursor)
    except UpstreamError as exc:  # a server that cannot list contributes nothing
        log.warning("%s listing without server %s: %s", kind, upstream.name, exc)
        return (), None
