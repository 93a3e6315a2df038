"""The CEL activation (``tool``, ``args``, ``principal``, ``session``), built once per decision."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from policies.cel_conditions import Needs
from policies.errors import ConditionError
from policies.session import SessionState
from policies.tool_labels import ToolLabels
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

__all__ = ["build_context", "merge_needs", "principal_value", "tool_value"]


def merge_needs(needs: Iterable[Needs]) -> Needs:
    """The union of several conditions' needs (a whole-value need absorbs field needs)."""
    merged: dict[str, frozenset[str] | None] = {}
    for need in needs:
        for name, fields in need.items():
            if name in merged:
                known = merged[name]
                merged[name] = None if known is None or fields is None else known | fields
            else:
                merged[name] = fields
    return merged


def _pick(value: Mapping[str, Any], fields: frozenset[str] | None) -> dict[str, Any]:
    if fields is None:
        return value if isinstance(value, dict) else dict(value)
    return {key: value[key] for key in fields if key in value}


def tool_value(tool: ToolDef, labels: ToolLabels | None = None) -> dict[str, Any]:
    found = labels or ToolLabels()
    return {
        "name": tool.name,
        "server": tool.server,
        "upstream_name": tool.upstream_name,
        "annotations": dict(tool.annotations or {}),
        "flags": list(tool.flags),
        "labels": sorted(found.all),
        "source_labels": sorted(found.sources),
        "sink_labels": sorted(found.sinks),
    }


def principal_value(principal: Principal) -> dict[str, Any]:
    return {
        "id": principal.id,
        "roles": sorted(principal.roles),
        "claims": dict(principal.claims),
        "tenant": principal.tenant,
        "connections": sorted(principal.connections),
    }


def build_context(
    needs: Needs,
    tool: ToolDef,
    args: Mapping[str, Any] | None,
    principal: Principal,
    session: SessionState | None,
    *,
    labels: ToolLabels | None = None,
) -> Any:
    """A ``cel.Context`` holding only what the conditions read: converting values is the cost.

    Raises:
        ConditionError: When a value cannot be converted to CEL.
    """
    variables: dict[str, Any] = {}
    if "tool" in needs:
        variables["tool"] = _pick(tool_value(tool, labels), needs["tool"])
    if "args" in needs:
        variables["args"] = _pick(args or {}, needs["args"])
    if "principal" in needs:
        variables["principal"] = _pick(principal_value(principal), needs["principal"])
    if "session" in needs:
        fields = needs["session"]
        variables["session"] = (session or SessionState("")).cel_value(fields)
    import cel  # with the first condition, not at start (see cel_conditions)

    try:
        return cel.Context(variables)
    except Exception as exc:  # unconvertible argument values fail closed too
        raise ConditionError(f"{type(exc).__name__}: {exc}") from None
