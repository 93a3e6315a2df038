"""`PolicyEngine`: one compiled policy, and the decisions it makes on tools, resources and prompts.

The engine is what the gateway holds (through a `PolicyHolder`) and asks. It builds, once per
compiled policy, the parts that decide: `ToolPolicy` for tool listings and calls,
`ResourcePolicy` for resource reads and prompt gets, `SessionGates` for what of a session
listings read, all concluding through one `Verdicts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from policies.compiler import CompiledPolicy, compile_policy, empty_policy
from policies.flags import FlagHiding
from policies.groups import group_tool_name, unknown_tools
from policies.label_policy import LabelPolicy
from policies.loader import load_files
from policies.messages import message_templates
from policies.resource_policy import ResourcePolicy
from policies.rules import CompiledRule
from policies.scopes import ScopeRequirements
from policies.session import SessionState
from policies.session_gates import SessionGates
from policies.tool_labels import ServerLabels, ToolLabels
from policies.tool_policy import ToolPolicy
from policies.verdicts import Verdicts
from toolsets.context import Principal
from toolsets.decision import Decision, Effect
from toolsets.errors import ConfigIssue
from toolsets.tooldef import ToolDef

__all__ = ["PolicyEngine"]


class PolicyEngine:
    """An immutable, compiled policy; swap engines to reload (see `PolicyHolder`)."""

    def __init__(self, compiled: CompiledPolicy, *, root: Path | None = None) -> None:
        """Wrap a compiled policy; use `load` or `empty` to build one. ``root``: the config
        file's directory, which `policies.where` shows rule files relative to."""
        self._compiled = compiled
        self.root = root
        self._rules = {rule.id: rule for rule in compiled.rules}
        tool_rules = [rule for rule in compiled.rules if rule.selector is None]
        self._gates = SessionGates(tool_rules, compiled.groups)
        verdicts = Verdicts(compiled.version, shadowing=any(r.shadow for r in compiled.rules))
        templates = message_templates([compiled.default.message, *(r.message for r in self.rules)])
        self._tools = ToolPolicy(
            tool_rules,
            dataclasses.replace(compiled.default, policy_version=compiled.version),
            verdicts=verdicts,
            gates=self._gates,
            flags=FlagHiding(compiled.hide_flagged),
            templates=templates,
        )
        defaults = {
            kind: dataclasses.replace(default, policy_version=compiled.version)
            for kind, default in compiled.resource_defaults.items()
        }
        self._resources = ResourcePolicy(
            compiled.rules, defaults, verdicts=verdicts, templates=templates
        )
        self._scopes = ScopeRequirements(compiled.scope_rules)
        self._labels = LabelPolicy(compiled.label_rules, self._rules)
        read = [*(r.variables for r in self.rules), *(t.roots for t in templates.values())]
        self._uses_session = self._gates.reads_session or any("session" in r for r in read)

    @classmethod
    def load(cls, paths: Sequence[str | Path], *, root: Path | None = None) -> PolicyEngine:
        """Load and compile policy files, layered in the given order; ``root``: the config
        file's directory (see `policies.where`).

        Raises:
            PolicyError: With every issue across all files, each located.
        """
        return cls(compile_policy(load_files(paths)), root=root)

    @classmethod
    def empty(cls, default_effect: Effect = "allow") -> PolicyEngine:
        """An engine without rules, for a gateway with no policy configured."""
        return cls(empty_policy(default_effect))

    @property
    def version(self) -> str:
        """Hash of the loaded files (layer order matters)."""
        return self._compiled.version

    @property
    def files(self) -> tuple[str, ...]:
        """The loaded files, in layer order."""
        return self._compiled.files

    @property
    def rules(self) -> tuple[CompiledRule, ...]:
        """Every rule, in load order."""
        return self._compiled.rules

    @property
    def default(self) -> Decision:
        """The decision on a tool call no rule matches (``defaults.effect``, its approval)."""
        return self._compiled.default

    def rule(self, rule_id: str) -> CompiledRule:
        """The rule with id ``rule_id``.

        Raises:
            KeyError: When there is no such rule.
        """
        return self._rules[rule_id]

    @property
    def hide_flagged(self) -> frozenset[str]:
        """Flags that hide a tool unless a matching rule lists them in ``accept_flags``."""
        return self._compiled.hide_flagged

    @property
    def scopes(self) -> ScopeRequirements:
        """The OAuth scopes calls need (rules with ``scopes``)."""
        return self._scopes

    @property
    def resources(self) -> ResourcePolicy:
        """Decisions on resource reads and prompt gets (the rules naming them)."""
        return self._resources

    @property
    def labels(self) -> LabelPolicy:
        """The labels of tools (annotations, label rules) and how decisions show them."""
        return self._labels

    def tool_labels(self, tool: ToolDef, server: ServerLabels | None = None) -> ToolLabels:
        """``tool``'s labels under this policy, with its server's settings ``server``."""
        return self._labels.tool_labels(tool, server)

    def evaluate_visibility(
        self,
        tool: ToolDef,
        principal: Principal,
        session: SessionState | None = None,
        server: ServerLabels | None = None,
    ) -> Decision:
        """Decide whether ``tool`` is listed for ``principal`` in ``session`` (``hide`` removes
        it); see `ToolPolicy.evaluate_visibility`."""
        labels = self._labels.tool_labels(tool, server)
        return self._tools.evaluate_visibility(tool, principal, session, labels)

    def evaluate_call(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        principal: Principal,
        session: SessionState | None = None,
        server: ServerLabels | None = None,
    ) -> Decision:
        """Decide a call of ``tool`` with ``args`` in ``session`` (None: a fresh session;
        ``server``: its server's label settings); ``hide`` means "answer as unknown tool".
        The decision carries the tool's and the session's labels."""
        labels = self._labels.tool_labels(tool, server)
        decision = self._tools.evaluate_call(tool, args, principal, session, labels)
        return self._labels.annotate(decision, labels, session)

    @property
    def groups(self) -> Mapping[str, tuple[str, ...]]:
        """Tool groups by name: their tools are hidden until the group is loaded in the session."""
        return self._gates.groups

    def groups_of(self, tool_name: str) -> tuple[str, ...]:
        """The groups ``tool_name`` belongs to (empty when it is in none)."""
        return self._gates.groups_of(tool_name)

    @property
    def reads_session(self) -> bool:
        """Whether listings depend on the session (gates, groups or rules reading ``session``)."""
        return self._gates.reads_session

    @property
    def uses_session(self) -> bool:
        """Whether any decision reads session state: listings (`reads_session`), a condition
        of any rule (tools, resources, prompts; shadow ones too) or a message reading
        ``session``. When False, decisions are the same in every session."""
        return self._uses_session

    def session_key(self, session: SessionState | None) -> Hashable:
        """What listings read of ``session`` (None: a fresh one): under this policy, sessions
        with equal keys see the same tools. None when listings read no session."""
        return self._gates.key(session)

    def check_tool_names(self, known: Collection[str]) -> list[ConfigIssue]:
        """One located issue per tool name in ``unlock_after``, ``lock_after``,
        ``require_first`` or ``groups`` that is not in ``known`` (the ``load_NAME`` tools of the
        policy's groups count as known)."""
        loaders = {group_tool_name(name) for name in self.groups}
        names = loaders.union(known) if loaders else known
        return unknown_tools(self._compiled.tool_references, names)
