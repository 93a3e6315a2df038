"""``lockgate policy explain`` (text and ``--json``) and the console's explain form name the
part of the deciding rule's ``a || b`` condition that held, as the approval context pack does."""

from __future__ import annotations

import argparse
import json

import pytest
from policy_support import FIXTURES

from gateway.api.console_views import explained
from gateway.cli.policy import register
from policies.cases import CallSpec
from policies.engine import PolicyEngine

POLICY = str(FIXTURES / "condition_or.yaml")
WHEN = 'args.amount > 100 || "intern" in principal.roles'
HELD = f'when "intern" in principal.roles (the part that held of: {WHEN}; not args.amount > 100)'
INTERN_PAYS = ("--tool", "bank__pay", "--args", '{"amount": 5}', "--role", "intern")


def explain(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", "explain", *argv, POLICY])
    assert args.func(args) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_explain_names_the_or_part_that_held_under_the_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = explain(capsys, *INTERN_PAYS).splitlines()
    assert lines[:4] == [
        "effect:   ask",
        f"rule:     big-or-intern ({POLICY}:6)",
        f"          {HELD}",
        "reason:   a large payment or an intern paying",
    ]


def test_explain_json_names_the_or_part_that_held_and_the_one_that_did_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = json.loads(explain(capsys, "--json", *INTERN_PAYS))
    assert (shown["effect"], shown["rule"]) == ("ask", "big-or-intern")
    assert shown["condition"] == HELD
    assert shown["condition_parts"] == [
        {"part": "args.amount > 100", "held": False},
        {"part": '"intern" in principal.roles', "held": True},
    ]


def test_explain_of_a_rule_without_an_or_prints_no_condition_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    refund = ("--tool", "bank__refund", "--args", '{"amount": 500}')
    assert explain(capsys, *refund).splitlines()[:3] == [
        "effect:   deny",
        f"rule:     big-refund ({POLICY}:11)",
        "reason:   a large refund",
    ]
    shown = json.loads(explain(capsys, "--json", *refund))
    assert (shown["rule"], shown["condition"], shown["condition_parts"]) == (
        "big-refund",
        None,
        [],
    )


def test_the_console_explains_the_or_part_that_held_as_policy_explain_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    call = CallSpec(tool="bank__pay", args={"amount": 5}, roles=["intern"])
    shown = explained(PolicyEngine.load([POLICY]), call)
    assert shown["text"] + "\n" == explain(capsys, *INTERN_PAYS)
    assert (shown["json"]["condition"], shown["json"]["condition_parts"][1]["held"]) == (
        HELD,
        True,
    )
