"""`PinnedToolset`: serves only tool definitions that match their accepted pins.

Below it the catalogue is what the upstreams list; above it, every definition has been checked
against its pin (`PinGuard.review`), and a changed definition that is quarantined is left out
until someone accepts it. The check runs once per catalogue version, before anyone sees it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Protocol

import anyio

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["PinGuard", "PinnedToolset"]


class PinGuard(Protocol):
    """Decides which definitions may be served (see `gateway.pins.ToolPins`)."""

    @property
    def version(self) -> Hashable:
        """Changes whenever a review could answer differently (a definition was accepted)."""
        ...

    async def review(self, tools: Mapping[str, ToolDef]) -> frozenset[str]:
        """Check ``tools`` (by exposed name) against their pins; the names held back."""
        ...


class PinnedToolset(WrapperToolset):
    """The wrapped catalogue without quarantined definitions; calls pass through (the tool a
    call carries was looked up in this catalogue)."""

    def __init__(self, wrapped: Toolset, guard: PinGuard) -> None:
        super().__init__(wrapped)
        self.guard = guard
        self._lock = anyio.Lock()
        self._key: Hashable = object()
        self._tools: dict[str, ToolDef] = {}

    @property
    def version(self) -> Hashable:
        return (self.wrapped.version, self.guard.version)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        if self.version == self._key:
            return self._tools
        async with self._lock:  # one review per catalogue version, however many listers wait
            key = self.version
            if key != self._key:
                tools = await self.wrapped.get_tools(ctx)
                held = await self.guard.review(tools)
                self._tools = {n: t for n, t in tools.items() if n not in held}
                self._key = key if self.version == key else object()
        return self._tools
