"""The `Toolset` abstraction: a set of tools that can be listed and called."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
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
    """A set of tools. Wrappers add behaviour; leaves execute."""

    @property
    def label(self) -> str:
        """A short name for messages."""
        return type(self).__name__

    @abstractmethod
    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        """The tools visible in ``ctx``, by exposed name."""

    @abstractmethod
    async def call_tool(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        """Call the tool ``name`` with ``args``.

        Raises:
            ToolNotFoundError: no such tool is visible in ``ctx``.
        """

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return None
