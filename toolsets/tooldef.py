"""`ToolDef`: the frozen description of one exposed tool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolsets.canonical import sha256_hex

__all__ = ["TOOL_NAME_RE", "ToolDef"]

TOOL_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""Exposed names: valid MCP tool names and valid OpenAI function names."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDef:
    """One tool as the gateway exposes it.

    Attributes:
        name: Exposed name (``{prefix}__{tool}`` for upstream tools).
        description: Upstream description (untrusted text).
        input_schema: JSON Schema of the arguments.
        output_schema: JSON Schema of the structured result, if declared.
        annotations: MCP tool annotations in wire form (camelCase keys); untrusted hints.
        title: Human-readable title, if declared.
        server: Name of the server (or local toolset) that owns the tool.
        upstream_name: The tool's name on its server.
        flags: Warning flags on the definition (see `toolsets.upstream.flags`); derived from it, so
            the pin covers them.
        icons: MCP icons in wire form, passed through.
        execution: MCP ``execution`` (``taskSupport``...) in wire form, passed through.
        meta: The upstream's ``_meta`` without the keys the gateway owns (``lockgate/...``).
        pin: SHA-256 of the canonical JSON of the definition as served (upstream text with
            invisible characters escaped and over-long text cut); renaming keeps it.
    """

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    server: str = ""
    upstream_name: str = ""
    flags: tuple[str, ...] = ()
    icons: tuple[Mapping[str, Any], ...] | None = None
    execution: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    pin: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        if not self.upstream_name:
            object.__setattr__(self, "upstream_name", self.name)
        object.__setattr__(self, "pin", sha256_hex(self.definition()))

    def definition(self) -> dict[str, Any]:
        """The upstream definition that the pin covers (the optional parts only when present,
        so pins taken before they were passed through still match)."""
        definition: dict[str, Any] = {
            "name": self.upstream_name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations,
        }
        optional: dict[str, Any] = {
            "icons": self.icons,
            "execution": self.execution,
            "_meta": self.meta,
        }
        definition.update({key: value for key, value in optional.items() if value is not None})
        return definition
