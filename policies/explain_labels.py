"""What ``policy explain`` says about data-flow labels: the tool's (and where each comes from)
and the session's (and the calls that brought each in)."""

from __future__ import annotations

from typing import Any

from policies.engine import PolicyEngine
from policies.session import SessionState
from policies.tool_labels import annotation_labels
from toolsets.tooldef import ToolDef

__all__ = ["label_json", "label_lines"]


def _names(labels: frozenset[str]) -> str:
    return ", ".join(sorted(labels)) or "-"


def label_lines(engine: PolicyEngine, tool: ToolDef, session: SessionState | None) -> list[str]:
    """Lines for the text explanation (none when neither the tool nor the session has labels)."""
    labels = engine.tool_labels(tool)
    carried = session.labels if session is not None else frozenset()
    if not labels.all and not carried:
        return []
    lines = [f"labels:   tool sources {_names(labels.sources)}; sinks {_names(labels.sinks)}"]
    derived = annotation_labels(tool.annotations)
    if derived.all:
        lines.append(
            f"  from annotations: sources {_names(derived.sources)}; sinks {_names(derived.sinks)}"
        )
    for rule in engine.labels.labeller.rules_for(tool):
        where = f"{rule.file}:{rule.line}" if rule.line else rule.file
        got = rule.labels
        lines.append(
            f"  from rule {rule.id} ({where}): sources {_names(got.sources)}; "
            f"sinks {_names(got.sinks)}"
        )
    if session is not None:
        book = session.label_book
        for name in sorted(carried):
            calls = ", ".join(f"{s.tool} (call {s.call_id})" for s in book.sources(name))
            lines.append(f"  session: {name} via {calls}")
        if not carried:
            lines.append("  session: none")
    return lines


def label_json(engine: PolicyEngine, tool: ToolDef, session: SessionState | None) -> dict[str, Any]:
    """The same as JSON-ready data."""
    labels = engine.tool_labels(tool)
    book = session.label_book if session is not None else None
    return {
        "tool": {"sources": sorted(labels.sources), "sinks": sorted(labels.sinks)},
        "rules": [rule.id for rule in engine.labels.labeller.rules_for(tool)],
        "session": {}
        if book is None
        else {name: [s.to_json() for s in book.sources(name)] for name in sorted(book.names)},
    }
