"""`CompiledRule`: a rule compiled to matchers and CEL conditions; `match_rules` over a list."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from policies.activation import merge_needs
from policies.cel_conditions import Condition, Needs, compile_condition
from policies.errors import ConditionError
from policies.gates import Lock, RuleGates
from policies.limits import compile_limit
from policies.matchers import (
    PrincipalMatcher,
    StrMatcher,
    compile_globs,
    compile_principals,
    is_literal,
)
from policies.model import RuleModel
from policies.preview import Preview
from policies.resource_rules import ResourceSelector, resource_selector
from toolsets.context import Principal
from toolsets.decision import EFFECT_RANK, ApprovalOptions, Effect
from toolsets.rates import RateLimit

__all__ = ["CompiledRule", "compile_rule", "match_rules"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompiledRule:
    """A rule ready to evaluate.

    Attributes:
        order: Position in load order across all files (ties go to the lowest).
        id: The rule id.
        effect: Its effect; ``rank`` is that effect's restrictiveness.
        file: The file that defines it; ``line`` where the rule starts.
        tools: Tool globs, None for any tool; ``servers`` likewise.
        when: Condition that must hold; ``unless``: condition that must not hold.
        conditional: Whether it has a ``when`` or ``unless``.
        variables: CEL variables its conditions read; ``needs``: which fields of them.
        accept_flags: Flags of ``defaults.hide_flagged`` that do not hide the tools it matches.
        preview: The read-only tool its approvers see the result of (``ask`` rules only).
        gates: Its session gates (``unlock_after``, ``lock_after``, ``require_first``), if any.
        shadow: ``mode: shadow``: evaluated for calls, recorded on the decision, never enforced.
        limit: Its rate limit on the calls it allows, if any.
        selector: Its ``resources`` or ``prompts`` selector: then it is about those, not tools.
        locked: Set on the locked form of a rule (`policies.gates.apply_gates`): the gate that
            locks it in the session being decided.
    """

    order: int
    id: str
    effect: Effect
    rank: int
    file: str
    line: int | None
    tools: tuple[str, ...] | None
    servers: tuple[str, ...] | None
    match_tool: StrMatcher | None
    match_server: StrMatcher | None
    match_principal: PrincipalMatcher | None
    when: Condition | None
    unless: Condition | None
    conditional: bool
    variables: frozenset[str]
    needs: Needs
    reason: str
    message: str | None
    approval: ApprovalOptions
    redact: tuple[str, ...]
    accept_flags: frozenset[str] = frozenset()
    preview: Preview | None = None
    gates: RuleGates | None = None
    shadow: bool = False
    limit: RateLimit | None = None
    selector: ResourceSelector | None = None
    locked: Lock | None = None

    @property
    def literal_tools(self) -> tuple[str, ...] | None:
        """The tool names when every tool pattern is a literal name, else None."""
        if self.tools is not None and all(is_literal(t) for t in self.tools):
            return self.tools
        return None

    @property
    def literal_servers(self) -> tuple[str, ...] | None:
        """The server names when every server pattern is a literal name, else None."""
        if self.servers is not None and all(is_literal(s) for s in self.servers):
            return self.servers
        return None

    def applies_to(self, name: str, server: str) -> bool:
        """Whether the tool/server selectors match (the part that depends on the tool only)."""
        return (self.match_tool is None or self.match_tool(name)) and (
            self.match_server is None or self.match_server(server)
        )

    def holds(self, context: Any, memo: dict[Condition, bool]) -> bool:
        """Whether ``when`` holds and ``unless`` does not, in a ``cel.Context``.

        Raises:
            ConditionError: When a condition cannot be evaluated.
        """
        if self.when is not None and not self.when.evaluate(context, memo):
            return False
        return self.unless is None or not self.unless.evaluate(context, memo)


def compile_rule(
    rule: RuleModel, *, order: int, file: str, line: int | None, approval: ApprovalOptions
) -> CompiledRule:
    """Compile a validated rule with an effect; ``approval`` is its resolved approval options."""
    if rule.effect is None:
        raise ValueError(f"rule {rule.id!r} has no effect: it only sets labels")
    when = compile_condition(rule.when) if rule.when is not None else None
    unless = compile_condition(rule.unless) if rule.unless is not None else None
    variables = (when.variables if when else frozenset()) | (
        unless.variables if unless else frozenset()
    )
    return CompiledRule(
        order=order,
        id=rule.id,
        effect=rule.effect,
        rank=EFFECT_RANK[rule.effect],
        file=file,
        line=line,
        tools=tuple(rule.tools) if rule.tools is not None else None,
        servers=tuple(rule.servers) if rule.servers is not None else None,
        match_tool=compile_globs(rule.tools) if rule.tools is not None else None,
        match_server=compile_globs(rule.servers) if rule.servers is not None else None,
        match_principal=compile_principals(rule.principals) if rule.principals else None,
        when=when,
        unless=unless,
        conditional=when is not None or unless is not None,
        variables=variables,
        needs=merge_needs(c.needs for c in (when, unless) if c is not None),
        reason=rule.reason or f"matched rule {rule.id!r}",
        message=rule.message,
        approval=approval,
        redact=tuple(rule.redact),
        accept_flags=frozenset(rule.accept_flags),
        preview=Preview(rule.preview.tool, rule.preview.args) if rule.preview else None,
        gates=RuleGates.of(rule),
        shadow=rule.mode == "shadow",
        limit=compile_limit(rule.id, rule.limit),
        selector=resource_selector(rule.resources, rule.prompts),
    )


def match_rules(
    rules: Iterable[CompiledRule], principal: Principal, activation: Callable[[], Any]
) -> tuple[list[CompiledRule], dict[int, str]]:
    """The ``rules`` that match ``principal`` and whose conditions hold, in order, and the
    errors of the conditions that could not be evaluated, by rule order (those rules count as
    matching: the decision fails closed). ``activation`` builds the ``cel.Context``; it is
    called at the first conditional rule (again while it raises `ConditionError`)."""
    matched: list[CompiledRule] = []
    failures: dict[int, str] = {}
    context: Any = None
    memo: dict[Condition, bool] = {}
    for rule in rules:
        if rule.match_principal is not None and not rule.match_principal(principal):
            continue
        if rule.conditional:
            try:
                if context is None:
                    context = activation()
                if not rule.holds(context, memo):
                    continue
            except ConditionError as exc:
                failures[rule.order] = str(exc)
        matched.append(rule)
    return matched, failures
