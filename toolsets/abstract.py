"""The `Toolset` abstraction: a set of tools that can be listed and called."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from types import TracebackType
from typing import Any, Protocol, Self

from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ToolsChangedHandler", "Toolset"]


class ToolsChangedHandler(Protocol):
    """Called when a toolset's catalogue changed (an upstream sent ``tools/list_changed``)."""

    async def __call__(self, source: str) -> None: ...


class Toolset(ABC):
    """A set of tools. Wrappers add behaviour; leaves execute.

    A call is one pass down the chain: the caller looks the tool up once (``get_tools``) and
    hands the `ToolDef` it found to ``call_tool``, which every wrapper passes on; nobody looks
    it up again.
    """

    @property
    def label(self) -> str:
        """A short name for messages."""
        return type(self).__name__

    @property
    def version(self) -> Hashable:
        """Changes whenever ``get_tools`` may answer differently.

        Catalogue caches (`CombinedToolset`, `PrefixedToolset`, `FilteredToolset`) are keyed by
        it, so a toolset whose catalogue changes must change it; a fixed catalogue keeps the
        default. Below `CombinedToolset` a catalogue depends on the context only through
        `variant`: what one caller may see is decided above it (`FilteredToolset`).
        """
        return 0

    def variant(self, ctx: CallContext) -> Hashable:
        """Which of this toolset's catalogues ``ctx`` gets: None, the one every caller gets
        (the default); else a key of the catalogue its caller's own upstream connection
        listed (`toolsets.upstream.per_principal`). Caches are kept per (version, variant)."""
        return None

    @abstractmethod
    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        """The tools visible in ``ctx``, by exposed name (a cached dict: do not mutate)."""

    @abstractmethod
    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        """Call ``tool`` (exposed here as ``name``, as listed by ``get_tools``) with ``args``."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return None
