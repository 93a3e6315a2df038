"""Several files layer in order: rules from every layer count, earlier layers win ties."""

from __future__ import annotations

import pytest
from policy_support import engine, tool, who

from policies import ALL_DECISION_KINDS, ApprovalOptions

LAYERS = engine("layers/org.yaml", "layers/team.yaml", "layers/local.yaml")


@pytest.mark.parametrize(
    ("name", "effect", "rule", "matched"),
    [
        pytest.param(
            "deploy__prod",
            "deny",
            "org-no-prod-deploy",
            ("org-no-prod-deploy", "team-allow-deploys"),
            id="a-later-allow-cannot-override-an-earlier-deny",
        ),
        pytest.param(
            "deploy__staging",
            "allow",
            "team-allow-deploys",
            ("team-allow-deploys",),
            id="a-later-layer-adds-rules",
        ),
        pytest.param(
            "db__query",
            "ask",
            "org-ask-db",
            ("org-ask-db", "team-ask-db", "local-allow-db-query"),
            id="ties-go-to-the-earliest-layer",
        ),
        pytest.param(
            "db__drop",
            "hide",
            "local-hide-db-drop",
            ("org-ask-db", "team-ask-db", "local-hide-db-drop"),
            id="a-later-layer-can-restrict",
        ),
        pytest.param(
            "reports__q3", "defer", "team-defer-reports", ("team-defer-reports",), id="defer"
        ),
        pytest.param("wiki__read", "ask", None, (), id="the-most-restrictive-default-wins"),
    ],
)
def test_layered_files_decide_together(
    name: str, effect: str, rule: str | None, matched: tuple[str, ...]
) -> None:
    decision = LAYERS.evaluate_call(tool(name), {}, who(), None)
    assert (decision.effect, decision.rule_id, decision.matched) == (effect, rule, matched)


def test_the_default_comes_from_the_most_restrictive_layer() -> None:
    decision = LAYERS.evaluate_call(tool("wiki__read"), {}, who(), None)
    assert decision.reason == "organisation default"


def test_default_approval_fields_come_from_the_first_layer_that_sets_them() -> None:
    decision = LAYERS.evaluate_call(tool("wiki__read"), {}, who(), None)
    assert decision.approval == ApprovalOptions(
        approvers=("role:security",), expires=30 * 60, hold=5, decisions=ALL_DECISION_KINDS
    )


def test_a_rule_in_a_later_layer_falls_back_to_its_own_file_defaults_first() -> None:
    decision = LAYERS.evaluate_call(tool("reports__q3"), {}, who(), None)
    assert decision.rule_id == "team-defer-reports"
    assert decision.approval == ApprovalOptions(
        approvers=("role:security",),
        expires=3600,
        hold=5,
        decisions=frozenset({"approve", "deny"}),
    )


def test_layer_order_changes_which_rule_wins_a_tie() -> None:
    reversed_layers = engine("layers/local.yaml", "layers/team.yaml", "layers/org.yaml")
    decision = reversed_layers.evaluate_call(tool("db__query"), {}, who(), None)
    assert (decision.effect, decision.rule_id) == ("ask", "team-ask-db")
    assert decision.matched == ("local-allow-db-query", "team-ask-db", "org-ask-db")


APPROVALS = engine("approvals.yaml")


@pytest.mark.parametrize(
    ("name", "rule", "expected"),
    [
        pytest.param(
            "a__full",
            "full",
            ApprovalOptions(
                approvers=("caller", "role:security", "user:alice"),
                expires=3600,
                hold=50,
                decisions=frozenset({"approve", "deny"}),
            ),
            id="every-field-from-the-rule",
        ),
        pytest.param(
            "a__partial",
            "partial",
            ApprovalOptions(approvers=("caller",), expires=90, hold=0.5),
            id="missing-fields-from-the-file-defaults-then-built-ins",
        ),
        pytest.param(
            "a__other",
            None,
            ApprovalOptions(approvers=("caller",), expires=15 * 60, hold=0.5),
            id="the-default-decision",
        ),
    ],
)
def test_approval_options_resolve_per_field(
    name: str, rule: str | None, expected: ApprovalOptions
) -> None:
    decision = APPROVALS.evaluate_call(tool(name), {}, who(), None)
    assert (decision.effect, decision.rule_id, decision.approval) == ("ask", rule, expected)
