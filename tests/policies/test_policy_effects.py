"""Every effect, precedence inside one file, the default, and what a decision carries."""

from __future__ import annotations

import pytest
from policy_support import FIXTURES, engine, tool, who

from policies import DEFAULT_APPROVAL, Decision, PolicyEngine

EFFECTS = engine("effects.yaml")


@pytest.mark.parametrize(
    ("name", "effect", "rule", "matched"),
    [
        pytest.param(
            "notes__read",
            "allow",
            "allow-notes-read",
            ("allow-notes-read", "allow-all-notes"),
            id="allow",
        ),
        pytest.param(
            "notes__write",
            "ask",
            "ask-notes-write",
            ("ask-notes-write", "allow-all-notes"),
            id="ask-beats-allow",
        ),
        pytest.param("reports__weekly", "defer", "defer-reports", ("defer-reports",), id="defer"),
        pytest.param("shell__run", "deny", "deny-shell", ("deny-shell",), id="deny-by-server"),
        pytest.param("admin__users", "hide", "hide-admin", ("hide-admin",), id="hide"),
        pytest.param(
            "notes__purge",
            "deny",
            "deny-notes-purge",
            ("allow-all-notes", "ask-notes-purge", "deny-notes-purge", "deny-notes-purge-again"),
            id="deny-beats-ask-and-earliest-deny-wins-the-tie",
        ),
        pytest.param(
            "notes__secrets",
            "hide",
            "hide-notes-secret",
            ("allow-all-notes", "hide-notes-secret"),
            id="hide-beats-everything",
        ),
        pytest.param("calendar__list", "deny", None, (), id="no-match-gives-default"),
    ],
)
def test_the_most_restrictive_matching_rule_decides(
    name: str, effect: str, rule: str | None, matched: tuple[str, ...]
) -> None:
    decision = EFFECTS.evaluate_call(tool(name), {}, who(), None)
    assert (decision.effect, decision.rule_id, decision.matched) == (effect, rule, matched)


def test_a_deny_carries_the_message_the_model_reads() -> None:
    decision = EFFECTS.evaluate_call(tool("shell__run"), {"cmd": "ls"}, who(), None)
    assert (decision.effect, decision.rule_id) == ("deny", "deny-shell")
    assert decision.message == "Shell access is disabled."
    assert decision.reason == "matched rule 'deny-shell'"


def test_the_default_carries_its_reason_message_and_the_policy_version() -> None:
    decision = EFFECTS.evaluate_call(tool("calendar__list"), {}, who(), None)
    assert decision == Decision(
        effect="deny",
        rule_id=None,
        reason="nothing matched",
        message="Not permitted by default.",
        approval=DEFAULT_APPROVAL,
        matched=(),
        policy_version=EFFECTS.version,
        redact=(),
    )


def test_redact_is_the_union_over_every_matched_rule_in_order() -> None:
    decision = EFFECTS.evaluate_call(tool("notes__purge"), {}, who(), None)
    assert decision.rule_id == "deny-notes-purge"
    assert decision.redact == ("args.token", "args.headers.authorization")


def test_hide_is_reported_at_call_time_and_removes_the_tool_from_listings() -> None:
    call = EFFECTS.evaluate_call(tool("admin__users"), {}, who(), None)
    listing = EFFECTS.evaluate_visibility(tool("admin__users"), who())
    assert (call.effect, call.rule_id) == ("hide", "hide-admin")
    assert (listing.effect, listing.rule_id) == ("hide", "hide-admin")


def test_a_denied_tool_stays_listed_so_the_model_can_read_why() -> None:
    listing = EFFECTS.evaluate_visibility(tool("shell__run"), who())
    assert (listing.effect, listing.rule_id) == ("deny", "deny-shell")


def test_repeated_evaluations_return_equal_decisions() -> None:
    first = EFFECTS.evaluate_call(tool("notes__write"), {}, who(), None)
    second = EFFECTS.evaluate_call(tool("notes__write"), {"x": 1}, who("user:other"), None)
    assert first == second
    assert first.rule_id == "ask-notes-write"


@pytest.mark.parametrize("effect", ["allow", "ask", "deny", "hide"])
def test_an_empty_engine_applies_its_default_to_everything(effect: str) -> None:
    empty = PolicyEngine.empty(effect)  # type: ignore[arg-type]
    decision = empty.evaluate_call(tool("files__delete_file"), {}, who(), None)
    assert (decision.effect, decision.rule_id, decision.matched) == (effect, None, ())
    assert empty.files == ()
    assert decision.policy_version == empty.version


def test_the_version_is_a_hash_of_the_files_and_their_order() -> None:
    again = engine("effects.yaml")
    other_order = engine("layers/local.yaml", "layers/team.yaml")
    order = engine("layers/team.yaml", "layers/local.yaml")
    assert again.version == EFFECTS.version
    assert other_order.version != order.version
    assert EFFECTS.files == (str(FIXTURES / "effects.yaml"),)
