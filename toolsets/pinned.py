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
from toolsets.variants import Views
from toolsets.wrapper import WrapperToolset

__all__ = ["PinGuard", "PinnedToolset"]


class PinGuard(Protocol):
    """Decides which definitions may be served (see `gateway.pins.ToolPins`)."""

    @property
    def version(self) -> Hashable:
        """Changes whenever a review could answer differently (a definition was accepted)."""
        ...

    async def review(
        self, tools: Mapping[str, ToolDef], *, variant: bool = False
    ) -> frozenset[str]:
        """Check ``tools`` (by exposed name) against their pins; the names held back.
        ``variant``: the catalogue one principal's own connection listed (`Toolset.variant`),
        not the common one."""
        ...


class PinnedToolset(WrapperToolset):
    """The wrapped catalogue without quarantined definitions; calls pass through (the tool a
    call carries was looked up in this catalogue). Each variant is reviewed on its own."""

    def __init__(self, wrapped: Toolset, guard: PinGuard) -> None:
        super().__init__(wrapped)
        self.guard = guard
        self._lock = anyio.Lock()
        self._views: Views[dict[str, ToolDef]] = Views()

    @property
    def version(self) -> Hashable:
        return (self.wrapped.version, self.guard.version)

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        variant = self.wrapped.variant(ctx)
        served = self._views.get(variant, self.version)
        if served is not None:
            return served
        async with self._lock:  # one review per catalogue version, however many listers wait
            key = self.version
            served = self._views.get(variant, key)
            if served is None:
                tools = await self.wrapped.get_tools(ctx)
                held = await self.guard.review(tools, variant=variant is not None)
                served = {n: t for n, t in tools.items() if n not in held}
                if self.version == key:  # else the next lister reviews again
                    self._views.put(variant, key, served)
        return served
