"""CEL conditions on args, session, tool and principal; errors fail closed to deny."""

from __future__ import annotations

from typing import Any

import pytest
from policy_support import engine, tool, who

from policies import FAIL_CLOSED_MESSAGE, SessionState
from toolsets.context import Principal

CEL = engine("cel.yaml")
EUR = {"amount": 10, "currency": "EUR"}


def session_with(*calls: tuple[str, dict[str, Any]], session_id: str = "s-1") -> SessionState:
    session = SessionState(session_id)
    for name, args in calls:
        session.record(name, args)
    return session


@pytest.mark.parametrize(
    ("args", "effect", "rule", "matched"),
    [
        pytest.param(EUR, "allow", None, (), id="small-transfer-matches-nothing"),
        pytest.param(
            {"amount": 5000, "currency": "EUR"},
            "ask",
            "big-transfer",
            ("big-transfer",),
            id="condition-on-args",
        ),
        pytest.param(
            {"amount": 5000},
            "deny",
            "transfer-needs-currency",
            ("big-transfer", "transfer-needs-currency"),
            id="negated-has-on-a-missing-key",
        ),
        pytest.param(
            {"currency": "EUR"},
            "allow",
            None,
            (),
            id="has-guards-a-missing-key",
        ),
    ],
)
def test_conditions_read_the_call_arguments(
    args: dict[str, Any], effect: str, rule: str | None, matched: tuple[str, ...]
) -> None:
    decision = CEL.evaluate_call(tool("bank__transfer"), args, who(), SessionState("s"))
    assert (decision.effect, decision.rule_id, decision.matched) == (effect, rule, matched)


@pytest.mark.parametrize(
    ("history", "args", "effect", "rule"),
    [
        pytest.param((), EUR, "allow", None, id="first-call"),
        pytest.param(
            (("bank__transfer", {"amount": 1, "currency": "EUR"}),),
            EUR,
            "allow",
            None,
            id="second-call-different-args",
        ),
        pytest.param(
            (("bank__transfer", EUR),),
            EUR,
            "deny",
            "repeated-transfer",
            id="same-args-as-the-last-call",
        ),
        pytest.param(
            (("bank__transfer", {"amount": 1, "currency": "EUR"}),) * 2,
            EUR,
            "ask",
            "third-transfer",
            id="counter-of-earlier-calls",
        ),
        pytest.param(
            (("other__tool", EUR),) * 3,
            EUR,
            "allow",
            None,
            id="other-tools-do-not-count",
        ),
    ],
)
def test_conditions_read_the_session(
    history: tuple[tuple[str, dict[str, Any]], ...],
    args: dict[str, Any],
    effect: str,
    rule: str | None,
) -> None:
    decision = CEL.evaluate_call(tool("bank__transfer"), args, who(), session_with(*history))
    assert (decision.effect, decision.rule_id) == (effect, rule)


def test_session_id_and_total_calls_are_visible() -> None:
    fresh = CEL.evaluate_call(tool("misc__session"), {}, who(), session_with())
    used = CEL.evaluate_call(tool("misc__session"), {}, who(), session_with(("x__y", {})))
    other = CEL.evaluate_call(tool("misc__session"), {}, who(), session_with(session_id="s-2"))
    assert (fresh.effect, fresh.rule_id) == ("ask", "session-id")
    assert (used.effect, used.rule_id) == ("allow", None)
    assert (other.effect, other.rule_id) == ("allow", None)


def test_a_call_without_a_session_sees_an_empty_one() -> None:
    decision = CEL.evaluate_call(tool("bank__transfer"), EUR, who(), None)
    assert (decision.effect, decision.rule_id) == ("allow", None)


@pytest.mark.parametrize(
    ("annotations", "effect", "rule"),
    [
        pytest.param({"destructiveHint": True}, "ask", "destructive-hint", id="hint-true"),
        pytest.param({"destructiveHint": False}, "allow", None, id="hint-false"),
        pytest.param(None, "allow", None, id="no-annotations"),
    ],
)
def test_conditions_read_tool_annotations(
    annotations: dict[str, Any] | None, effect: str, rule: str | None
) -> None:
    decision = CEL.evaluate_call(tool("fs__remove", annotations), {}, who(), None)
    assert (decision.effect, decision.rule_id) == (effect, rule)


@pytest.mark.parametrize(
    ("principal", "effect", "rule"),
    [
        pytest.param(who("user:h", "ops"), "defer", "raw-upstream", id="role-in-list"),
        pytest.param(who("user:h"), "allow", None, id="role-missing"),
    ],
)
def test_conditions_read_tool_names_and_principal_roles(
    principal: Principal, effect: str, rule: str | None
) -> None:
    decision = CEL.evaluate_call(tool("misc__raw"), {}, principal, None)
    assert (decision.effect, decision.rule_id) == (effect, rule)


@pytest.mark.parametrize(
    ("principal", "effect", "rule"),
    [
        pytest.param(who("user:h", department="hr"), "allow", None, id="unless-holds"),
        pytest.param(who("user:e", department="eng"), "hide", "hr-only", id="unless-fails"),
    ],
)
def test_unless_reads_principal_claims_at_list_time(
    principal: Principal, effect: str, rule: str | None
) -> None:
    decision = CEL.evaluate_visibility(tool("hr__salaries"), principal)
    assert (decision.effect, decision.rule_id) == (effect, rule)


@pytest.mark.parametrize(
    ("name", "args", "principal", "rule", "error"),
    [
        pytest.param(
            "fs__write",
            {"content": "x"},
            who(),
            "etc-writes",
            "no such key 'path'",
            id="missing-key-without-has",
        ),
        pytest.param(
            "fs__write",
            {"path": 42},
            who(),
            "etc-writes",
            "startsWith",
            id="wrong-type",
        ),
        pytest.param(
            "misc__echo",
            {"text": "hi"},
            who(),
            "not-a-bool",
            "returned str, not a bool",
            id="non-boolean-result",
        ),
        pytest.param(
            "hr__salaries",
            {},
            who("user:x"),
            "hr-only",
            "no such key 'department'",
            id="missing-claim",
        ),
        pytest.param(
            "fs__write",
            {"path": object()},
            who(),
            "etc-writes",
            "Conversion Error",
            id="argument-cel-cannot-represent",
        ),
    ],
)
def test_an_evaluation_error_fails_closed_to_deny_with_the_error_in_the_reason(
    name: str, args: dict[str, Any], principal: Principal, rule: str, error: str
) -> None:
    decision = CEL.evaluate_call(tool(name), args, principal, None)
    assert (decision.effect, decision.rule_id) == ("deny", rule)
    assert decision.reason.startswith(f"policy condition of rule {rule!r} failed: ")
    assert error in decision.reason
    assert decision.message == FAIL_CLOSED_MESSAGE
    assert rule in decision.matched


def test_a_missing_claim_denies_at_list_time_but_keeps_the_tool_listed() -> None:
    decision = CEL.evaluate_visibility(tool("hr__salaries"), who("user:x"))
    assert (decision.effect, decision.rule_id) == ("deny", "hr-only")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("bank__transfer", id="rules-reading-args"),
        pytest.param("misc__session", id="rules-reading-session"),
    ],
)
def test_listing_ignores_rules_that_read_args_or_session(name: str) -> None:
    decision = CEL.evaluate_visibility(tool(name), who())
    assert (decision.effect, decision.rule_id, decision.matched) == ("allow", None, ())


def test_session_record_keeps_counters_and_a_copy_of_the_last_args() -> None:
    session = SessionState("s-9")
    args = {"path": "a"}
    session.record("files__read_file", args)
    session.record("files__read_file", {"path": "b"})
    session.record("files__write_file", args)
    args["path"] = "changed"
    assert session.cel_value() == {
        "id": "s-9",
        "calls": 3,
        "tool_calls": {"files__read_file": 2, "files__write_file": 1},
        "succeeded": {"files__read_file": 2, "files__write_file": 1},
        "last_args": {"files__read_file": {"path": "b"}, "files__write_file": {"path": "a"}},
        "groups": [],
        "labels": [],
        "label_sources": {},
    }


@pytest.mark.parametrize(
    ("source", "needs"),
    [
        pytest.param(
            'has(args.path) && args.path.endsWith(".env")', {"args": {"path"}}, id="field"
        ),
        pytest.param('args["path"] == "x"', {"args": None}, id="index-needs-everything"),
        pytest.param("size(args) > 0", {"args": None}, id="whole-value-as-argument"),
        pytest.param("args.size() > 0", {"args": None}, id="method-call"),
        pytest.param('args.exists(k, k == "a")', {"args": None}, id="macro-over-the-value"),
        pytest.param('"args.token" == args.x', {"args": {"x"}}, id="names-inside-strings"),
        pytest.param(
            "session.calls > 1 // args.x", {"session": None}, id="comments-disable-pruning"
        ),
        pytest.param(
            '"admin" in principal.roles && principal.claims.team == "a"',
            {"principal": {"roles", "claims"}},
            id="several-fields",
        ),
        pytest.param(
            "has(session.last_args.t) && session.last_args.t == args",
            {"session": {"last_args"}, "args": None},
            id="mixed",
        ),
    ],
)
def test_conditions_know_which_fields_they_read(
    source: str, needs: dict[str, set[str] | None]
) -> None:
    from policies.cel_conditions import compile_condition

    assert compile_condition(source).needs == {
        name: frozenset(fields) if fields is not None else None for name, fields in needs.items()
    }


def test_arguments_no_condition_reads_are_not_converted_to_cel() -> None:
    args = {"path": "/etc/passwd", "content": object()}
    decision = CEL.evaluate_call(tool("fs__write"), args, who(), None)
    assert (decision.effect, decision.rule_id) == ("deny", "etc-writes")
    assert decision.message == "Writing system files is not allowed."
