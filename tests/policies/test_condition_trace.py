"""Which part of a rule's ``when`` held a call: top-level ``||`` parts (strings, brackets and a
top-level ``? :`` respected), each checked against the call, and the condition in plain words."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.condition_trace import condition_words, or_parts, trace_when
from policies.engine import PolicyEngine
from toolsets.context import Principal
from toolsets.tooldef import ToolDef


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        pytest.param("a || b", ("a", "b"), id="two-parts"),
        pytest.param("(a || b)", ("a", "b"), id="enclosing-parentheses"),
        pytest.param('x.startsWith("a||b") || y', ('x.startsWith("a||b")', "y"), id="in-string"),
        pytest.param("a && (b || c)", ("a && (b || c)",), id="nested-only"),
        pytest.param("a && b || c", ("a && b", "c"), id="and-binds-tighter"),
        pytest.param("a ? b : c || d", ("a ? b : c || d",), id="conditional-binds-looser"),
        pytest.param("size(args) > 0", ("size(args) > 0",), id="one-part"),
    ],
)
def test_a_condition_splits_at_its_top_level_ors(source: str, parts: tuple[str, ...]) -> None:
    assert or_parts(source) == parts


POLICY = """\
version: 1
defaults: {effect: allow}
rules:
  - id: odd
    tools: [pay]
    when: 'args.amount > 100 || principal.roles.exists(r, r == "intern")'
    unless: 'args.approved_by_finance'
    effect: ask
"""


@pytest.mark.parametrize(
    ("args", "roles", "held"),
    [
        pytest.param({"amount": 500, "approved_by_finance": False}, [], [True, False], id="big"),
        pytest.param(
            {"amount": 5, "approved_by_finance": False}, ["intern"], [False, True], id="intern"
        ),
    ],
)
def test_the_part_that_held_is_named_in_plain_words(
    tmp_path: Path, args: dict[str, object], roles: list[str], held: list[bool]
) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text(POLICY, encoding="utf-8")
    engine = PolicyEngine.load([file])
    tool = ToolDef(name="pay", server="bank")
    who = Principal(id="user:x", roles=frozenset(roles))
    decision = engine.evaluate_call(tool, args, who)
    assert (decision.effect, decision.rule_id) == ("ask", "odd")

    rule = engine.rule("odd")
    parts = trace_when(rule, tool, args, who, None)

    assert [part.held for part in parts] == held
    (matched,) = [part.source for part in parts if part.held]
    (other,) = [part.source for part in parts if not part.held]
    assert condition_words(rule, parts) == (
        f"when {matched} (the part that held of: {rule.when.source if rule.when else ''}; "
        f"not {other}) and not args.approved_by_finance (its unless)"
    )
