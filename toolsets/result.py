"""`ToolResult`: what a tool call returns, kept in MCP wire form.

A result is held as the JSON object of an MCP ``CallToolResult`` (``content``,
``structuredContent``, ``isError``, ``_meta``). An upstream's result passes through the chain as
the object its JSON was decoded into, and a face encodes it once: no SDK models on the way.
Content blocks are parsed into MCP SDK models only when someone asks for ``content``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_types import ContentBlock, TextContent
from pydantic import TypeAdapter

__all__ = ["ToolResult"]

_BLOCKS: TypeAdapter[list[ContentBlock]] = TypeAdapter(list[ContentBlock])
_WIRE_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})


def _plain_text(block: Any) -> bool:
    """A text block with nothing but its text: valid MCP content without asking pydantic."""
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and len(block) == 2
    )


class ToolResult:
    """The result of a tool call (immutable; ``with_meta`` makes a changed copy).

    Attributes:
        content: MCP content blocks (text, image, audio, resource links, embedded resources).
        structured_content: The structured result, when the tool has an output schema.
        is_error: True when the tool failed; the model reads ``content``.
        meta: Extra ``_meta`` returned to the client (approval ids and the like).
    """

    __slots__ = ("_blocks", "_wire")

    def __init__(
        self,
        *,
        content: Sequence[ContentBlock] = (),
        structured_content: Mapping[str, Any] | None = None,
        is_error: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        blocks = [b.model_dump(by_alias=True, mode="json", exclude_none=True) for b in content]
        wire: dict[str, Any] = {"content": blocks}
        if structured_content is not None:
            wire["structuredContent"] = dict(structured_content)
        wire["isError"] = is_error
        if meta:
            wire["_meta"] = dict(meta)
        self._wire = wire
        self._blocks: tuple[ContentBlock, ...] | None = tuple(content)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ToolResult:
        """The result whose MCP wire form is ``data`` (as decoded from JSON; not copied deeply).

        The content blocks are validated as MCP content (pydantic, without copying their data)
        and kept as they came; ``structuredContent`` and ``_meta`` must be objects and
        ``isError`` a boolean.

        Raises:
            ValueError: ``data`` is not a ``CallToolResult`` object.
        """
        content = data.get("content", [])
        if not isinstance(content, list):
            raise ValueError("content must be a list of content blocks")
        blocks: tuple[ContentBlock, ...] | None = None
        if not all(_plain_text(block) for block in content):  # the common case needs no models
            blocks = tuple(_BLOCKS.validate_python(content))  # ValidationError is a ValueError
        for key in ("structuredContent", "_meta"):
            if data.get(key) is not None and not isinstance(data[key], dict):
                raise ValueError(f"{key} must be an object")
        is_error = data.get("isError", False)
        if not isinstance(is_error, bool):
            raise ValueError("isError must be true or false")
        wire = {k: v for k, v in data.items() if k in _WIRE_KEYS and v is not None}
        wire["content"] = content
        wire["isError"] = is_error
        result = cls.__new__(cls)
        result._wire, result._blocks = wire, blocks
        return result

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

    @property
    def wire(self) -> Mapping[str, Any]:
        """The MCP ``CallToolResult`` JSON object (camelCase keys; do not mutate)."""
        return self._wire

    @property
    def content(self) -> tuple[ContentBlock, ...]:
        """The content blocks as MCP SDK models (parsed on first use)."""
        if self._blocks is None:
            self._blocks = tuple(_BLOCKS.validate_python(self._wire["content"]))
        return self._blocks

    @property
    def structured_content(self) -> Mapping[str, Any] | None:
        structured: Mapping[str, Any] | None = self._wire.get("structuredContent")
        return structured

    @property
    def is_error(self) -> bool:
        return bool(self._wire["isError"])

    @property
    def meta(self) -> Mapping[str, Any] | None:
        meta: Mapping[str, Any] | None = self._wire.get("_meta")
        return meta

    def with_meta(self, meta: Mapping[str, Any] | None) -> ToolResult:
        """A copy whose ``_meta`` is ``meta`` (None removes it); content is shared, not copied."""
        wire = {k: v for k, v in self._wire.items() if k != "_meta"}
        if meta:
            wire["_meta"] = dict(meta)
        result = ToolResult.__new__(ToolResult)
        result._wire, result._blocks = wire, self._blocks
        return result

    def first_text(self) -> str:
        """The text of the first text block, or an empty string."""
        for block in self._wire["content"]:
            if block.get("type") == "text":
                return str(block.get("text", ""))
        return ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolResult) and other._wire == self._wire

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ToolResult({self._wire!r})"
