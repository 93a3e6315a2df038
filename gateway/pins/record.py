"""`PinRecord`: the accepted definition of one upstream tool, and a change waiting for review."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

__all__ = [
    "CONTENT_FIELDS",
    "MAX_DIFF",
    "Action",
    "PinRecord",
    "changed_fields",
    "definition_diff",
]

Action = Literal["quarantine", "warn", "accept"]
"""What happens when a served definition differs from its pin (``pins.on_change``)."""

UI_FIELD: Final = "_meta.ui"
"""An MCP App tool's UI (``_meta.ui`` or the flat ``_meta["ui/resourceUri"]``), reported as a
field of its own: the page a host renders for the tool is content, not metadata."""

CONTENT_FIELDS: Final = frozenset(
    {"name", "title", "description", "inputSchema", "outputSchema", "annotations", UI_FIELD}
)
"""What the model reads, the user sees or policies decide on; the rest (icons, execution, the
rest of ``_meta``) is metadata, governed by ``pins.on_metadata_change``."""

MAX_DIFF: Final = 20_000
"""Characters of a diff kept in events and API answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PinRecord:
    """One upstream tool's pin.

    Attributes:
        server: The upstream server.
        tool: The tool's name on that server.
        name: The exposed name when last seen.
        pin: SHA-256 of the accepted definition (`ToolDef.pin`).
        definition: The accepted definition (`ToolDef.definition()`).
        accepted_at: Unix time of acceptance.
        accepted_by: Who accepted it: ``first-use``, ``pins.on_change`` or an approver's id.
        changed_pin: The pin of a changed definition in quarantine, if any.
        changed: That changed definition.
        changed_at: Unix time the change was first seen.
    """

    server: str
    tool: str
    name: str
    pin: str
    definition: Mapping[str, Any]
    accepted_at: float
    accepted_by: str
    changed_pin: str | None = None
    changed: Mapping[str, Any] | None = None
    changed_at: float | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.server, self.tool)

    @property
    def quarantined(self) -> bool:
        return self.changed_pin is not None

    def accept(self, pin: str, definition: Mapping[str, Any], *, by: str, at: float) -> PinRecord:
        """This record with ``definition`` accepted (and nothing in quarantine)."""
        return replace(
            self,
            pin=pin,
            definition=definition,
            accepted_at=at,
            accepted_by=by,
            changed_pin=None,
            changed=None,
            changed_at=None,
        )

    def hold(self, pin: str, definition: Mapping[str, Any], *, at: float) -> PinRecord:
        """This record with ``definition`` in quarantine."""
        return replace(self, changed_pin=pin, changed=definition, changed_at=at)

    def fields(self) -> list[str]:
        """The top-level fields the quarantined change touches."""
        return changed_fields(self.definition, self.changed or {})

    def to_json(self, *, diff: bool = False) -> dict[str, Any]:
        """The record for the API (``diff``: with the unified diff of the change)."""
        data: dict[str, Any] = {
            "name": self.name,
            "server": self.server,
            "tool": self.tool,
            "state": "quarantined" if self.quarantined else "accepted",
            "pin": self.pin,
            "accepted_at": self.accepted_at,
            "accepted_by": self.accepted_by,
            "changed_pin": self.changed_pin,
            "changed_at": self.changed_at,
            "fields": self.fields() if self.quarantined else [],
        }
        if diff:
            data["definition"] = self.definition
            data["changed"] = self.changed
            data["diff"] = definition_diff(self.definition, self.changed) if self.changed else ""
        return data

    def to_row(self) -> dict[str, Any]:
        """Everything, for a store."""
        return {**self.to_json(), "definition": self.definition, "changed": self.changed}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> PinRecord:
        return cls(
            server=row["server"],
            tool=row["tool"],
            name=row["name"],
            pin=row["pin"],
            definition=row["definition"],
            accepted_at=row["accepted_at"],
            accepted_by=row["accepted_by"],
            changed_pin=row.get("changed_pin"),
            changed=row.get("changed"),
            changed_at=row.get("changed_at"),
        )


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The top-level keys whose values differ, sorted, and `UI_FIELD` when the UI changed."""
    fields = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if "_meta" in fields and _ui_of(before) != _ui_of(after):
        fields.add(UI_FIELD)
    return sorted(fields)


def _ui_of(definition: Mapping[str, Any]) -> tuple[Any, Any]:
    meta = definition.get("_meta")
    if not isinstance(meta, Mapping):
        return None, None
    return meta.get("ui"), meta.get("ui/resourceUri")


def definition_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """A unified diff of two definitions as indented JSON (cut at `MAX_DIFF` characters)."""
    lines = difflib.unified_diff(
        _lines(before), _lines(after), "accepted", "changed", lineterm="", n=2
    )
    text = "\n".join(lines)
    if len(text) > MAX_DIFF:
        text = text[:MAX_DIFF] + f"\n... ({len(text) - MAX_DIFF} more characters)"
    return text


def _lines(definition: Mapping[str, Any]) -> list[str]:
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=True).splitlines()
