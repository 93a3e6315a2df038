"""`Views`: a wrapper's catalogue views, one per catalogue variant, each kept for one version.

Most catalogues are the same for every caller (variant None). A server reached over one
connection per principal serves each principal the catalogue its own connection listed where it
differs (`Toolset.variant`), so a wrapper that caches what it made of the catalogue below keeps
one view per variant, rebuilt when the version changes; the views are dropped all at once when
`LIMIT` variants are held.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["LIMIT", "Views"]

LIMIT = 1024
"""Variants whose views are kept (as `toolsets.filtered.CACHE_LIMIT`)."""

V = TypeVar("V")


class Views(Generic[V]):
    """Views by variant, each valid for the version it was made at."""

    def __init__(self) -> None:
        self._views: dict[Hashable, tuple[Hashable, V]] = {}

    def get(self, variant: Hashable, version: Hashable) -> V | None:
        """The view of ``variant`` made at ``version``, or None."""
        found = self._views.get(variant)
        return found[1] if found is not None and found[0] == version else None

    def put(self, variant: Hashable, version: Hashable, view: V) -> V:
        """Keep ``view`` as ``variant``'s at ``version``; returns it."""
        if variant not in self._views and len(self._views) >= LIMIT:
            self._views.clear()
        self._views[variant] = (version, view)
        return view

    def clear(self) -> None:
        """Forget every view."""
        self._views.clear()
