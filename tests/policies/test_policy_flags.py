"""Flagged tools: ``defaults.hide_flagged`` hides them unless a matching rule's ``accept_flags``
names the flag; the decision says why, and ``lockgate policy explain`` shows it per flag."""

from __future__ import annotations

import argparse
import json
from typing import Any

import jsonschema_rs
import pytest
import yaml
from policy_support import FIXTURES, who

from gateway.cli.policy import register
from policies import PolicyEngine
from policies.cases import run_case_file
from policies.flags import FLAG_REASONS
from policies.schema import SCHEMA_FILES
from toolsets.errors import PolicyError
from toolsets.tooldef import ToolDef
from toolsets.upstream.flags import FLAGS

FLAGGED = FIXTURES / "flags"
REVIEWED = FLAGGED / "reviewed.yaml"
INJECTION = ("injection-marker",)
HIDDEN_REASON = (
    "the tool's description carries injection markers (flagged injection-marker: hidden by "
    "defaults.hide_flagged; no matching rule lists it in accept_flags)"
)


def flagged(name: str, *flags: str) -> ToolDef:
    server, _, upstream = name.partition("__")
    return ToolDef(name=name, server=server, upstream_name=upstream, flags=flags)


def load(*names: str) -> PolicyEngine:
    return PolicyEngine.load([FLAGGED / name for name in names])


def test_a_tool_with_injection_markers_is_hidden_by_default_from_listings_and_calls() -> None:
    engine = load("reviewed.yaml")
    tool = flagged("math__mul", *INJECTION)

    listing = engine.evaluate_visibility(tool, who())
    calling = engine.evaluate_call(tool, {"a": 2, "b": 3}, who(), None)

    for decision in (listing, calling):
        assert (decision.effect, decision.rule_id, decision.matched) == ("hide", None, ())
        assert decision.reason == HIDDEN_REASON
        assert decision.policy_version == engine.version


def test_the_same_tool_without_the_flag_gets_the_default() -> None:
    decision = load("reviewed.yaml").evaluate_visibility(flagged("math__mul"), who())

    assert (decision.effect, decision.rule_id) == ("allow", None)


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param(("sensitive-path",), id="sensitive-path"),
        pytest.param(("invisible-characters", "long-description"), id="invisible-and-long"),
    ],
)
def test_other_flags_do_not_hide_by_default(flags: tuple[str, ...]) -> None:
    decision = load("reviewed.yaml").evaluate_visibility(flagged("math__mul", *flags), who())

    assert decision.effect == "allow"


def test_a_matching_rule_that_accepts_the_flag_lets_its_own_effect_apply() -> None:
    tool = flagged("math__add", "injection-marker", "sensitive-path")
    engine = load("reviewed.yaml")

    listing = engine.evaluate_visibility(tool, who())
    calling = engine.evaluate_call(tool, {"a": 1}, who(), None)

    for decision in (listing, calling):
        assert (decision.effect, decision.rule_id) == ("allow", "reviewed-add")


@pytest.mark.parametrize(
    ("principal", "effect", "rule"),
    [
        pytest.param(who("user:rita", "reviewer"), "ask", "reviewers-see-notes", id="reviewer"),
        pytest.param(who("agent:bot"), "hide", None, id="anyone-else"),
    ],
)
def test_acceptance_is_per_caller(principal: Any, effect: str, rule: str | None) -> None:
    tool = flagged("notes__write", *INJECTION)

    decision = load("reviewed.yaml").evaluate_visibility(tool, principal)

    assert (decision.effect, decision.rule_id) == (effect, rule)


@pytest.mark.parametrize(
    ("args", "effect"),
    [
        pytest.param({"n": 3}, "allow", id="condition-holds"),
        pytest.param({"n": 300}, "hide", id="condition-fails"),
    ],
)
def test_a_conditional_rule_accepts_only_the_calls_it_matches(
    args: dict[str, Any], effect: str
) -> None:
    engine = load("reviewed.yaml")
    tool = flagged("calc__sum", *INJECTION)

    assert engine.evaluate_visibility(tool, who()).effect == "hide"  # no args at list time
    assert engine.evaluate_call(tool, args, who(), None).effect == effect


def test_a_rule_whose_condition_fails_accepts_nothing() -> None:
    engine = load("reviewed.yaml")

    plain = engine.evaluate_call(flagged("calc__broken"), {}, who(), None)
    poisoned = engine.evaluate_call(flagged("calc__broken", *INJECTION), {}, who(), None)

    assert (plain.effect, plain.rule_id) == ("deny", "broken-accept")  # fails closed
    assert (poisoned.effect, poisoned.rule_id, poisoned.reason) == ("hide", None, HIDDEN_REASON)


def test_a_rule_that_hides_the_tool_anyway_stays_the_reason() -> None:
    decision = load("reviewed.yaml").evaluate_visibility(flagged("admin__x", *INJECTION), who())

    assert (decision.effect, decision.rule_id) == ("hide", "hide-admin")
    assert decision.reason == "admin tools are not for agents"


def test_an_empty_hide_flagged_turns_hiding_off() -> None:
    engine = load("off.yaml")

    decision = engine.evaluate_visibility(flagged("math__mul", *INJECTION), who())

    assert engine.hide_flagged == frozenset()
    assert (decision.effect, decision.rule_id) == ("allow", None)


def test_a_declared_list_replaces_the_built_in_one() -> None:
    engine = load("sensitive.yaml")

    assert engine.hide_flagged == {"sensitive-path", "invisible-characters"}
    assert engine.evaluate_visibility(flagged("files__mv", *INJECTION), who()).effect == "ask"
    hidden = engine.evaluate_visibility(
        flagged("files__mv", "invisible-characters", "sensitive-path"), who()
    )
    assert hidden.effect == "hide"
    assert hidden.reason == (
        "the tool's description holds invisible characters; the tool's description names "
        "sensitive paths (flagged invisible-characters, sensitive-path: hidden by "
        "defaults.hide_flagged; no matching rule lists them in accept_flags)"
    )
    read = flagged("files__read", "sensitive-path")
    assert engine.evaluate_visibility(read, who()).rule_id == "reviewed-read"


def test_layered_lists_add_up_so_a_later_file_cannot_lift_an_earlier_one() -> None:
    engine = load("sensitive.yaml", "off.yaml")

    assert engine.hide_flagged == {"sensitive-path", "invisible-characters"}
    assert engine.evaluate_visibility(flagged("x__y", "sensitive-path"), who()).effect == "hide"


def test_a_gateway_without_a_policy_hides_injection_markers_too() -> None:
    engine = PolicyEngine.empty("allow")

    assert engine.evaluate_visibility(flagged("math__mul", *INJECTION), who()).effect == "hide"
    assert engine.evaluate_visibility(flagged("math__mul"), who()).effect == "allow"


def test_every_flag_has_a_reason() -> None:
    assert set(FLAG_REASONS) == set(FLAGS)


def test_unknown_flag_names_are_load_errors_with_file_line_and_key() -> None:
    path = FLAGGED / "unknown_flags.yaml"
    with pytest.raises(PolicyError) as caught:
        PolicyEngine.load([path])

    known = "(known: injection-marker, invisible-characters, long-description, sensitive-path)"
    assert [(i.file, i.line, i.column, i.key, i.message) for i in caught.value.issues] == [
        (
            str(path),
            3,
            36,
            "defaults.hide_flagged.1",
            f"unknown flag 'prompt-injection' {known}",
        ),
        (str(path), 7, 20, "rules.0.accept_flags.0", f"unknown flag 'invisible-chars' {known}"),
    ]


def test_the_policy_schema_knows_both_keys_and_the_flag_names() -> None:
    policy_schema = next(iter(SCHEMA_FILES))
    validator = jsonschema_rs.validator_for(json.loads(policy_schema.read_text(encoding="utf-8")))

    for name in ("reviewed.yaml", "off.yaml", "sensitive.yaml"):
        assert validator.is_valid(yaml.safe_load((FLAGGED / name).read_text(encoding="utf-8")))
    broken = yaml.safe_load((FLAGGED / "unknown_flags.yaml").read_text(encoding="utf-8"))
    assert not validator.is_valid(broken)


def test_case_files_can_give_the_tool_flags() -> None:
    _, results = run_case_file(FLAGGED / "flags.cases.yaml")

    assert [(r.case.name, r.failures) for r in results] == [
        ("an unreviewed tool with injection markers is hidden from listings", ()),
        ("the reviewed tool is listed", ()),
    ]


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", "explain", *argv])
    assert args.func(args) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_explain_says_which_flag_hides_the_tool(capsys: pytest.CaptureFixture[str]) -> None:
    out = explain(
        capsys,
        "--list",
        "--tool",
        "math__mul",
        "--flag",
        "injection-marker",
        "--flag",
        "sensitive-path",
        str(REVIEWED),
    )

    assert out.splitlines()[:7] == [
        "effect:   hide",
        "rule:     (defaults)",
        f"reason:   {HIDDEN_REASON}",
        "flags:",
        "  injection-marker  hides the tool: in defaults.hide_flagged, no matching rule accepts it",
        "  sensitive-path    not in defaults.hide_flagged",
        "matched:  (no rule)",
    ]


def test_explain_names_the_rule_that_accepts_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    out = explain(capsys, "--tool", "math__add", "--flag", "injection-marker", str(REVIEWED))

    assert out.splitlines()[:5] == [
        "effect:   allow",
        f"rule:     reviewed-add ({REVIEWED}:7)",
        "reason:   matched rule 'reviewed-add'",
        "flags:",
        f"  injection-marker  accepted by reviewed-add ({REVIEWED}:7)",
    ]


def test_explain_json_lists_each_flag(capsys: pytest.CaptureFixture[str]) -> None:
    out = explain(
        capsys, "--json", "--tool", "math__mul", "--flag", "injection-marker", str(REVIEWED)
    )

    explained = json.loads(out)
    assert (explained["effect"], explained["rule"]) == ("hide", None)
    assert explained["flags"] == [
        {"flag": "injection-marker", "hide_flagged": True, "accepted_by": []}
    ]


def test_explain_refuses_an_unknown_flag(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["policy", "explain", "--tool", "a__b", "--flag", "poison", "x.yaml"])

    assert exited.value.code == 2
    assert "invalid choice: 'poison'" in capsys.readouterr().err
