"""`PrincipalCatalogues`: the tool catalogues of a server reached over one connection per
principal, kept per principal where they differ.

The common catalogue is the one listed by the first connection to come up (then by its
re-listings): a caller with no catalogue of their own, or whose own is the same, gets it. A
principal whose connection listed something else gets their own, last-known while their
connection is closed; `variant` names them to the catalogue caches above
(`toolsets.abstract.Toolset.variant`), so what one principal's connection listed never reaches
another's listing.
"""

from __future__ import annotations

from collections.abc import Mapping

from toolsets.tooldef import ToolDef

__all__ = ["MAX_KNOWN", "PrincipalCatalogues"]

MAX_KNOWN = 10_000
"""Principals whose last-known catalogue is kept; the oldest is forgotten past it."""


class PrincipalCatalogues:
    """The common catalogue and each principal's own (by `principal_key`)."""

    def __init__(self) -> None:
        self.common: dict[str, ToolDef] = {}
        self._common_from: str | None = None
        self._own: dict[str, dict[str, ToolDef]] = {}
        self._differs: set[str] = set()
        self._fixed = False
        self.version = 0

    def rebase(self, common: Mapping[str, ToolDef]) -> None:
        """Make ``common`` the common catalogue, whoever connects (a server listed over a
        session of its own: `PerPrincipalToolset` with ``shared``)."""
        self._fixed, self.common = True, dict(common)
        self._differs = {k for k, own in self._own.items() if own != self.common}
        self.version += 1

    def variant(self, key: str) -> str | None:
        """``key``'s variant: their key when their own catalogue differs from the common one."""
        return key if key in self._differs else None

    def tools(self, key: str) -> dict[str, ToolDef]:
        """The catalogue ``key`` gets."""
        own = self._own.get(key) if key in self._differs else None
        return self.common if own is None else own

    def adopt(self, key: str, listed: Mapping[str, ToolDef]) -> bool:
        """``key``'s connection listed ``listed``; True when a served catalogue changed (the
        version moved on)."""
        if key in self._own and self._own[key] == listed:
            return False
        tools = self._own[key] = dict(listed)
        if len(self._own) > MAX_KNOWN:
            oldest = next(k for k in self._own if k != self._common_from)
            del self._own[oldest]
            self._differs.discard(oldest)
        if not self._fixed and self._common_from in (None, key):
            self._common_from, self.common = key, tools
            self._differs = {k for k, own in self._own.items() if own != tools}
        else:
            was = key in self._differs
            if tools == self.common:
                self._differs.discard(key)
            else:
                self._differs.add(key)
            if not was and key not in self._differs:
                return False  # served the common catalogue before and after
        self.version += 1
        return True
