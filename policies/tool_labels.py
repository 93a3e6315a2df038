"""Tool labels: what a tool's data carries (its source labels, added to the session when a call
succeeds) and where it sends data (its sink labels), from MCP annotations, the server's config
and the policy's ``labels:`` / ``sink_labels:`` rules.

MCP annotations are hints from the server: ``openWorldHint: true`` makes a tool a source of
``untrusted`` and, unless ``readOnlyHint: true``, an ``egress`` sink. Absent hints derive nothing
(the specification's defaults, open world and not read-only, would label every tool). A server
whose annotations are not trusted (``servers[].labels.annotations: false``) derives none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import PydanticCustomError

from policies.matchers import StrMatcher, compile_globs
from policies.resource_rules import ResourceKind, ResourceSelector
from toolsets.tooldef import ToolDef

__all__ = [
    "EGRESS",
    "UNTRUSTED",
    "LabelRule",
    "ServerLabels",
    "ToolLabeller",
    "ToolLabels",
    "annotation_labels",
    "check_label_rule",
    "compile_label_rule",
]

UNTRUSTED: Final = "untrusted"
EGRESS: Final = "egress"
_CACHE_LIMIT: Final = 8192
_DECIDING: Final = (
    "principals",
    "when",
    "unless",
    "message",
    "approval",
    "limit",
    "redact",
    "accept_flags",
    "unlock_after",
    "lock_after",
    "require_first",
    "scopes",
)


@dataclass(frozen=True, slots=True)
class ToolLabels:
    """A tool's labels: ``sources`` (what it reads carries them) and ``sinks`` (where it sends)."""

    sources: frozenset[str] = frozenset()
    sinks: frozenset[str] = frozenset()

    @property
    def all(self) -> frozenset[str]:
        """Both kinds (what CEL reads as ``tool.labels``)."""
        return self.sources | self.sinks

    def __or__(self, other: ToolLabels) -> ToolLabels:
        return ToolLabels(self.sources | other.sources, self.sinks | other.sinks)


NO_LABELS: Final = ToolLabels()


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLabels:
    """A server's label settings from the gateway config (``servers[].labels``).

    Attributes:
        annotations: Whether its tools' MCP annotations derive labels.
        sources: Source labels of every tool of the server.
        sinks: Sink labels of every tool of the server.
    """

    annotations: bool = True
    sources: frozenset[str] = frozenset()
    sinks: frozenset[str] = frozenset()


def annotation_labels(annotations: Mapping[str, Any] | None) -> ToolLabels:
    """The labels MCP annotations derive (only hints set explicitly count)."""
    if not annotations or annotations.get("openWorldHint") is not True:
        return NO_LABELS
    if annotations.get("readOnlyHint") is True:
        return ToolLabels(frozenset({UNTRUSTED}))
    return ToolLabels(frozenset({UNTRUSTED}), frozenset({EGRESS}))


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelRule:
    """A rule's ``labels`` / ``sink_labels``, for the tools its ``tools``/``servers`` select
    (its ``principals``, ``when`` and ``unless`` do not gate labels: they describe the data)."""

    id: str
    file: str
    line: int | None
    match_tool: StrMatcher | None
    match_server: StrMatcher | None
    labels: ToolLabels
    selector: ResourceSelector | None = None

    def applies_to(self, tool: ToolDef) -> bool:
        return (
            self.selector is None
            and (self.match_tool is None or self.match_tool(tool.name))
            and (self.match_server is None or self.match_server(tool.server))
        )

    def applies_to_read(self, kind: ResourceKind, name: str, server: str) -> bool:
        """Whether it labels a read of resource ``name`` (a URI) or a get of prompt ``name``."""
        return (
            self.selector is not None
            and self.selector.kind == kind
            and self.selector.match(name)
            and (self.match_server is None or self.match_server(server))
        )


def compile_label_rule(
    rule_id: str,
    *,
    file: str,
    line: int | None,
    tools: Sequence[str] | None,
    servers: Sequence[str] | None,
    sources: Sequence[str],
    sinks: Sequence[str],
    selector: ResourceSelector | None = None,
) -> LabelRule:
    """A `LabelRule` from a validated rule's fields."""
    return LabelRule(
        selector=selector,
        id=rule_id,
        file=file,
        line=line,
        match_tool=compile_globs(tools) if tools is not None else None,
        match_server=compile_globs(servers) if servers is not None else None,
        labels=ToolLabels(frozenset(sources), frozenset(sinks)),
    )


def check_label_rule(rule: Any) -> Any:
    """A rule model's after-validator: a rule without effect only sets labels, and sink labels
    are on tool rules only."""
    if rule.sink_labels is not None and (rule.resources is not None or rule.prompts is not None):
        raise PydanticCustomError(
            "rule_kind",
            "sink_labels apply to tool rules only (a resource read or a prompt get sends "
            "nothing out): use labels",
        )
    # a rule with neither effect nor labels: `policies.loader` reports the missing effect
    deciding = [name for name in _DECIDING if getattr(rule, name)]
    if rule.effect is None and deciding:
        raise PydanticCustomError(
            "rule_kind",
            f"a rule without effect only sets labels, yet this one has {deciding[0]}: "
            "add an effect, or move it to a rule of its own",
        )
    return rule


class ToolLabeller:
    """The labels of each tool under one policy (cached by tool and server settings)."""

    def __init__(self, rules: Sequence[LabelRule]) -> None:
        self.rules = tuple(rules)
        self._cache: dict[tuple[str, str, str, ServerLabels | None], ToolLabels] = {}

    def labels(self, tool: ToolDef, server: ServerLabels | None = None) -> ToolLabels:
        """``tool``'s labels: its annotations' (unless ``server`` distrusts them), the server's
        and every label rule's that selects it."""
        key = (tool.name, tool.server, tool.pin, server)
        found = self._cache.get(key)
        if found is None:
            found = self._compute(tool, server)
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = found
        return found

    def _compute(self, tool: ToolDef, server: ServerLabels | None) -> ToolLabels:
        trusted = server is None or server.annotations
        found = annotation_labels(tool.annotations) if trusted else NO_LABELS
        if server is not None:
            found = found | ToolLabels(server.sources, server.sinks)
        for rule in self.rules:
            if rule.applies_to(tool):
                found = found | rule.labels
        return found

    def read_labels(self, kind: ResourceKind, name: str, server: str) -> frozenset[str]:
        """The labels a read of resource ``name`` (or a get of prompt ``name``) brings in."""
        return frozenset(
            label
            for rule in self.rules
            if rule.applies_to_read(kind, name, server)
            for label in rule.labels.sources
        )

    def rules_for(self, tool: ToolDef) -> tuple[LabelRule, ...]:
        """The label rules that select ``tool`` (for explanations)."""
        return tuple(rule for rule in self.rules if rule.applies_to(tool))
