"""`LabelPolicy`: the data-flow labels a decision carries, and the calls a label rule names.

Each decided call carries the tool's labels and the session's (`toolsets.call_labels.CallLabels`).
When the rule that decided reads ``session.labels``, its reason (and message) end by naming the
calls that brought those labels into the session: ``(session labels: untrusted via web__fetch
and private via files__read)``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Final

from policies.rules import CompiledRule
from policies.session import SessionState
from policies.session_labels import LabelSource
from policies.tool_labels import LabelRule, ServerLabels, ToolLabeller, ToolLabels
from toolsets.call_labels import CallLabels
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef

__all__ = ["LabelPolicy", "labels_named", "reads_session_labels"]

_LABEL_FIELDS: Final = frozenset({"labels", "label_sources"})
_LITERAL: Final = re.compile(r"""'([^'\\]*)'|"([^"\\]*)\"""")


def reads_session_labels(rule: CompiledRule) -> bool:
    """Whether ``rule``'s conditions read the session's labels."""
    if "session" not in rule.needs:
        return False
    fields = rule.needs["session"]
    return fields is None or bool(fields & _LABEL_FIELDS)


def labels_named(rule: CompiledRule, carried: frozenset[str]) -> frozenset[str]:
    """The ``carried`` labels ``rule``'s conditions name as string literals (all of them when
    it names none, e.g. ``size(session.labels) > 0``)."""
    sources = [c.source for c in (rule.when, rule.unless) if c is not None]
    literals = {a or b for source in sources for a, b in _LITERAL.findall(source)}
    named = carried & literals
    return named or carried


class LabelPolicy:
    """The label rules of one compiled policy, and how decisions show labels.

    Args:
        label_rules: The rules with ``labels`` or ``sink_labels``, in load order.
        rules: The deciding rules, by id.
    """

    def __init__(self, label_rules: Sequence[LabelRule], rules: Mapping[str, CompiledRule]) -> None:
        self.labeller = ToolLabeller(label_rules)
        self._readers = {rule_id: r for rule_id, r in rules.items() if reads_session_labels(r)}

    def tool_labels(self, tool: ToolDef, server: ServerLabels | None = None) -> ToolLabels:
        """``tool``'s labels (see `ToolLabeller.labels`)."""
        return self.labeller.labels(tool, server)

    def annotate(
        self, decision: Decision, labels: ToolLabels, session: SessionState | None
    ) -> Decision:
        """``decision`` carrying ``labels`` and the session's, its reason naming the calls that
        brought in the labels its rule read."""
        carried = session.labels if session is not None else frozenset()
        if not labels.all and not carried:
            return decision
        call = CallLabels(
            tool=tuple(sorted(labels.all)),
            adds=tuple(sorted(labels.sources)),
            session=tuple(sorted(carried)),
        )
        rule = self._readers.get(decision.rule_id or "")
        if rule is None or session is None or not carried:
            return dataclasses.replace(decision, labels=call)
        suffix = f" (session labels: {session.label_book.describe(labels_named(rule, carried))})"
        message = decision.message + suffix if decision.message is not None else None
        return dataclasses.replace(
            decision, labels=call, reason=decision.reason + suffix, message=message
        )

    def add_to(
        self,
        session: SessionState,
        tool: ToolDef,
        *,
        call_id: str,
        at: float,
        server: ServerLabels | None = None,
    ) -> frozenset[str]:
        """Add ``tool``'s source labels to ``session`` as a succeeded call ``call_id`` would
        (explanations, test cases and replays rebuild sessions so); returns the new ones."""
        sources = self.tool_labels(tool, server).sources
        if not sources:
            return frozenset()
        return session.add_labels(sources, LabelSource(call_id=call_id, tool=tool.name, at=at))

    def explain(self, tool: ToolDef, server: ServerLabels | None = None) -> list[str]:
        """Lines telling where ``tool``'s labels come from (for ``policy explain``)."""
        labels = self.tool_labels(tool, server)
        lines = [
            f"  tool labels: sources {sorted(labels.sources) or '-'}, "
            f"sinks {sorted(labels.sinks) or '-'}"
        ]
        for rule in self.labeller.rules_for(tool):
            where = f"{rule.file}:{rule.line}" if rule.line else rule.file
            lines.append(
                f"    from rule {rule.id} ({where}): sources {sorted(rule.labels.sources) or '-'}"
                f", sinks {sorted(rule.labels.sinks) or '-'}"
            )
        return lines
