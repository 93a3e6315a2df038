"""A rule's ``limit`` in policy files: how it is written, what it compiles to, how it rides on a
decision, how ``policy check`` / ``explain`` show it, and located errors for every bad value."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest
import yaml
from policy_support import FIXTURES, tool, who
from rate_limit_support import LIMITS

from gateway.cli.policy import main as policy_main
from policies import PolicyEngine
from policies.schema import SCHEMA_FILES
from toolsets.errors import PolicyError
from toolsets.rates import Rate, RateLimit

BAD = FIXTURES / "limits" / "bad_limits.yaml"
POLICY_SCHEMA = next(path for path in SCHEMA_FILES if path.name == "policy.schema.json")


@pytest.fixture(scope="module")
def engine() -> PolicyEngine:
    return PolicyEngine.load([LIMITS])


def one_rule_policy(tmp_path: Path, limit: object) -> Path:
    path = tmp_path / "policy.yaml"
    rule = {"id": "r", "tools": ["crm__search"], "effect": "allow", "limit": limit}
    path.write_text(yaml.safe_dump({"version": 1, "rules": [rule]}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        pytest.param({"rate": "60/min"}, Rate(count=60, period=60, burst=60), id="per-minute"),
        pytest.param({"rate": "5/s", "burst": 1}, Rate(count=5, period=1, burst=1), id="burst"),
        pytest.param({"rate": " 2 / hour "}, Rate(count=2, period=3600, burst=2), id="spaced"),
        pytest.param({"rate": "1000/d"}, Rate(count=1000, period=86400, burst=1000), id="day"),
        pytest.param({"rate": "3/second"}, Rate(count=3, period=1, burst=3), id="long-unit"),
    ],
)
def test_a_rate_is_n_per_unit_with_a_burst_of_n_unless_given(
    tmp_path: Path, limit: dict[str, object], expected: Rate
) -> None:
    [rule] = PolicyEngine.load([one_rule_policy(tmp_path, limit)]).rules
    assert rule.limit == RateLimit(rule_id="r", rate=expected)


@pytest.mark.parametrize(
    ("per", "expected"),
    [
        pytest.param("session", ("session",), id="one"),
        pytest.param(["tool", "principal"], ("tool", "principal"), id="combined-in-order"),
        pytest.param(None, (), id="unset-one-counter-for-all"),
    ],
)
def test_per_names_one_scope_or_a_combined_key(
    tmp_path: Path, per: object, expected: tuple[str, ...]
) -> None:
    limit = {"rate": "1/s"} if per is None else {"rate": "1/s", "per": per}
    [rule] = PolicyEngine.load([one_rule_policy(tmp_path, limit)]).rules
    assert rule.limit is not None
    assert rule.limit.per == expected


def test_a_decision_carries_the_limit_of_every_matching_rule(engine: PolicyEngine) -> None:
    allowed = engine.evaluate_call(tool("crm__update"), {"count": 1}, who(), None)
    held = engine.evaluate_call(tool("crm__update"), {"count": 500}, who(), None)
    assert [limit.rule_id for limit in allowed.limits] == ["bulk-update-per-caller"]
    assert (held.effect, held.limits) == ("ask", allowed.limits)
    assert engine.evaluate_call(tool("crm__other"), {}, who(), None).limits == ()


def test_a_shadow_rules_limit_rides_on_its_shadow_match(engine: PolicyEngine) -> None:
    decision = engine.evaluate_call(tool("crm__note"), {}, who(), None)
    [match] = decision.shadow
    assert decision.limits == ()
    assert match.limit is not None
    assert match.limit.describe() == "1/min per principal"
    assert match.retry_after is None


def test_every_bad_limit_is_a_located_error_naming_the_fix() -> None:
    with pytest.raises(PolicyError) as caught:
        PolicyEngine.load([BAD])
    issues = [(i.line, i.column, i.key, i.message) for i in caught.value.issues]
    expected_n = "expected N/unit, e.g. 60/min (units: s, min, h, d)"
    assert issues == [
        (6, 13, "rules.0.limit.rate", f"{expected_n}, got 60"),
        (9, 13, "rules.1.limit.rate", f"{expected_n}, got '60/week'"),
        (12, 13, "rules.2.limit.rate", "N must be 1 to 1,000,000, got 0"),
        (15, 24, "rules.3.limit.per", "each of principal, tool, session at most once"),
        (18, 24, "rules.4.limit.per.0", "Input should be 'principal', 'tool' or 'session'"),
        (18, 37, "rules.4.limit.burst", "Input should be greater than or equal to 1"),
        (
            21,
            5,
            "rules.5.limit",
            "a limit applies only to calls a rule allows; this rule's effect is 'ask' "
            "(put the limit on an allow rule, or drop it)",
        ),
        (
            25,
            5,
            "rules.6.limit",
            "a limit applies only to tool calls; this rule is about resources",
        ),
        (28, 24, "rules.7.limit.pre", "unknown key"),
        (31, 5, "rules.8.limit.rate", "required key is missing"),
    ]
    assert str(caught.value.issues[0]).startswith(f"{BAD}:6:13: rules.0.limit.rate: expected")


def test_policy_check_lists_each_limit_with_its_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert policy_main(["policy", "check", str(LIMITS)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"limit: search-per-caller: 2/min per principal ({LIMITS}:9)",
        f"limit: export-per-session: 1/h per session ({LIMITS}:20)",
        f"limit: reads-per-caller-and-tool: 3/s per principal, tool, burst 1 ({LIMITS}:25)",
        f"limit: ping-for-everyone: 2/d ({LIMITS}:30)",
        f"limit: bulk-update-per-caller: 10/min per principal ({LIMITS}:35)",
        f"limit: try-note-limit (shadow): 1/min per principal ({LIMITS}:45)",
    ]


def test_policy_check_fails_on_a_bad_limit_with_the_located_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert policy_main(["policy", "check", str(BAD)]) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first == (
        f"{BAD}:6:13: rules.0.limit.rate: expected N/unit, e.g. 60/min (units: s, min, h, d), "
        "got 60"
    )


def test_policy_explain_shows_the_limits_and_whether_the_call_counts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["policy", "explain", "--tool", "crm__update", str(LIMITS)]
    policy_main([*argv, "--args", '{"count": 1}'])
    policy_main([*argv, "--args", '{"count": 500}'])
    out = capsys.readouterr().out
    counted = f"  bulk-update-per-caller  10/min per principal  {LIMITS}:35"
    assert f"limits:   counted (the call runs at once)\n{counted}\n" in out
    assert (
        f"limits:   not counted (effect ask: only calls that run at once count)\n{counted}\n" in out
    )


def test_policy_explain_json_has_each_limit_with_its_location(
    capsys: pytest.CaptureFixture[str],
) -> None:
    policy_main(["policy", "explain", "--json", "--tool", "crm__get_record", str(LIMITS)])
    explained = json.loads(capsys.readouterr().out)
    assert explained["limits"] == [
        {
            "rule_id": "reads-per-caller-and-tool",
            "rate": "3/s",
            "per": ["principal", "tool"],
            "burst": 1,
            "file": str(LIMITS),
            "line": 25,
        }
    ]
    assert explained["limits_counted"] is True


def test_policy_explain_shows_a_shadow_rules_limit(capsys: pytest.CaptureFixture[str]) -> None:
    policy_main(["policy", "explain", "--tool", "crm__note", str(LIMITS)])
    assert "matched rule 'try-note-limit'; limit 1/min per principal" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("limit", "valid"),
    [
        pytest.param({"rate": "60/min", "per": "principal"}, True, id="one-scope"),
        pytest.param({"rate": "5/s", "per": ["principal", "tool"], "burst": 2}, True, id="list"),
        pytest.param({"rate": "60/week"}, False, id="bad-unit"),
        pytest.param({"rate": "1/s", "per": ["tool", "tool"]}, False, id="repeated-scope"),
        pytest.param({"per": "tool"}, False, id="no-rate"),
    ],
)
def test_the_policy_schema_validates_limits_as_the_loader_does(
    limit: dict[str, object], valid: bool
) -> None:
    validator = jsonschema_rs.validator_for(json.loads(POLICY_SCHEMA.read_text(encoding="utf-8")))
    rule = {"id": "r", "effect": "allow", "limit": limit}
    assert validator.is_valid({"version": 1, "rules": [rule]}) is valid
