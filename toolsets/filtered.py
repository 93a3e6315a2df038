"""`FilteredToolset`: lists only the tools a predicate accepts (the hide step of the chain)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["FilteredToolset", "ToolFilter"]

CACHE_LIMIT = 1024


class ToolFilter(Protocol):
    """Decides whether a tool is visible in a context."""

    def __call__(self, ctx: CallContext, tool: ToolDef) -> bool: ...


class FilteredToolset(WrapperToolset):
    """Keeps only the tools for which ``filter_func(ctx, tool)`` is true.

    Calls are not filtered again: a caller looks a tool up in this toolset's listing before it
    calls it, so a hidden tool is never found. With ``cache_key``, the filtered catalogue is kept
    per ``(wrapped version, variant, cache_key(ctx))``: contexts with the same key see the same
    tools.
    """

    def __init__(
        self,
        wrapped: Toolset,
        filter_func: ToolFilter,
        *,
        cache_key: Callable[[CallContext], Hashable] | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.filter_func = filter_func
        self.cache_key = cache_key
        self._cache: dict[tuple[Hashable, Hashable, Hashable], dict[str, ToolDef]] = {}

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        wrapped, key = self.wrapped, None
        if self.cache_key is not None:
            key = (wrapped.version, wrapped.variant(ctx), self.cache_key(ctx))
        cached = self._cache.get(key) if key is not None else None
        if cached is not None:
            return cached
        inner = await self.wrapped.get_tools(ctx)
        visible = {name: tool for name, tool in inner.items() if self.filter_func(ctx, tool)}
        if key is not None:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = visible
        return visible
