"""`ToolResult`: what a tool call returns, in MCP content blocks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_types import ContentBlock, TextContent

__all__ = ["ToolResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of a tool call.

    Attributes:
        content: MCP content blocks (text, image, audio, resource links, embedded resources).
        structured_content: The structured result, when the tool has an output schema.
        is_error: True when the tool failed; the model reads ``content``.
        meta: Extra ``_meta`` to return to the client (approval ids and the like).
    """

    content: Sequence[ContentBlock] = ()
    structured_content: Mapping[str, Any] | None = None
    is_error: bool = False
    meta: Mapping[str, Any] | None = field(default=None)

    @classmethod
    def text(
        cls, text: str, *, is_error: bool = False, meta: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """A result made of a single text block."""
        return cls(content=(TextContent(type="text", text=text),), is_error=is_error, meta=meta)

    @classmethod
    def error(cls, message: str, *, meta: Mapping[str, Any] | None = None) -> ToolResult:
        """An error result the model can read."""
        return cls.text(message, is_error=True, meta=meta)

    def first_text(self) -> str:
        """The text of the first text block, or an empty string."""
        for block in self.content:
            if isinstance(block, TextContent):
                return block.text
        return ""
