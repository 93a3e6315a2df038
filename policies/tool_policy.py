"""`ToolPolicy`: decisions on tool listings and tool calls.

The rules naming tools (neither ``resources`` nor ``prompts``) decide, found by name and server
through a `RuleIndex`; session gates lock rules, tool groups hide their tools until loaded, and
``defaults.hide_flagged`` hides flagged tools no matching rule accepts.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from policies.activation import build_context
from policies.cel_conditions import Needs
from policies.flags import FlagHiding
from policies.gates import apply_gates
from policies.index import RuleIndex
from policies.messages import MessageTemplate, rendered
from policies.rules import CompiledRule, match_rules
from policies.session import SessionState
from policies.session_gates import SessionGates
from policies.tool_labels import ToolLabels
from policies.verdicts import Lock, Verdicts, hidden
from toolsets.context import Principal
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef

__all__ = ["ToolPolicy"]


class ToolPolicy:
    """The tool rules of one compiled policy.

    Args:
        rules: The tool rules, in load order.
        default: The decision when no rule matches.
        verdicts: Concludes the rules that matched.
        gates: The policy's session gates and tool groups.
        flags: The flags that hide a tool.
        templates: The messages to render per call, by text.
    """

    def __init__(
        self,
        rules: Sequence[CompiledRule],
        default: Decision,
        *,
        verdicts: Verdicts,
        gates: SessionGates,
        flags: FlagHiding,
        templates: Mapping[str, MessageTemplate],
    ) -> None:
        self._index = RuleIndex(rules)
        self._default = default
        self._verdicts = verdicts
        self._gates = gates
        self._flags = flags
        self._templates = templates

    def evaluate_visibility(
        self,
        tool: ToolDef,
        principal: Principal,
        session: SessionState | None = None,
        labels: ToolLabels | None = None,
    ) -> Decision:
        """Decide whether ``tool`` is listed for ``principal`` in ``session`` (``hide`` removes it).

        Session gates and groups apply (None: a fresh session). Rules whose conditions read
        ``args`` are skipped, and so are rules reading ``session`` when none is given: they
        decide calls only.
        """
        found = self._index.candidates(tool.name, tool.server)
        in_session = session is not None
        return self._evaluate(
            tool,
            rules=found.session_list_rules if in_session else found.list_rules,
            needs=found.session_list_needs if in_session else found.list_needs,
            args=None,
            principal=principal,
            session=session,
            gated=found.gated,
            labels=labels,
        )

    def evaluate_call(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        principal: Principal,
        session: SessionState | None = None,
        labels: ToolLabels | None = None,
    ) -> Decision:
        """Decide a call of ``tool`` (whose labels are ``labels``) with ``args`` in ``session``
        (None: a fresh session); ``hide`` means "answer as unknown tool"."""
        found = self._index.candidates(tool.name, tool.server)
        decision = self._evaluate(
            tool,
            rules=found.call_rules,
            needs=found.call_needs,
            args=args,
            principal=principal,
            session=session,
            gated=found.gated,
            labels=labels,
        )
        if decision.message not in self._templates:
            return decision
        return rendered(
            decision, self._templates, tool=tool, args=args, principal=principal, session=session
        )

    def _evaluate(
        self,
        tool: ToolDef,
        *,
        rules: tuple[CompiledRule, ...],
        needs: Needs,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
        gated: bool,
        labels: ToolLabels | None = None,
    ) -> Decision:
        """``args`` is None for a listing; ``gated``: some of ``rules`` have session gates."""
        matched, failures = match_rules(
            rules,
            principal,
            lambda: build_context(needs, tool, args, principal, session, labels=labels),
        )
        lock: Lock | None = None
        if gated:
            lock = functools.partial(
                apply_gates, tool=tool.name, session=session, listing=args is None
            )
        decision = self._verdicts.conclude(matched, failures, self._default, lock)
        if decision.effect != "hide" and self._gates.groups:
            reason = self._gates.group_lock(tool.name, session)
            decision = decision if reason is None else hidden(decision, reason)
        if tool.flags and decision.effect != "hide":
            accepting = [r for r in matched if not r.shadow and r.order not in failures]
            return self._flags.apply(tool.flags, accepting, decision)
        return decision
