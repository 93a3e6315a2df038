"""Durations, name globs and the rule index that keeps evaluation independent of unrelated rules."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from policy_support import tool, who

from policies import PolicyEngine, format_duration, parse_duration
from policies.matchers import compile_glob, compile_globs, glob_problem


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("500ms", 0.5, id="ms"),
        pytest.param("50s", 50, id="s"),
        pytest.param("15m", 900, id="m"),
        pytest.param("1h", 3600, id="h"),
        pytest.param("1.5h", 5400, id="fraction"),
        pytest.param("2d", 172800, id="d"),
        pytest.param(30, 30, id="int-seconds"),
        pytest.param(2.5, 2.5, id="float-seconds"),
    ],
)
def test_durations_parse_to_seconds(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param("soon", id="word"),
        pytest.param("15", id="string-without-unit"),
        pytest.param("-1s", id="negative-string"),
        pytest.param(-1, id="negative-number"),
        pytest.param(True, id="bool"),
        pytest.param(float("inf"), id="infinite"),
    ],
)
def test_invalid_durations_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(900, "15m"), (50, "50s"), (3600, "1h"), (0.5, "500ms"), (90, "90s"), (1.25, "1.25s")],
)
def test_durations_format_compactly(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        pytest.param("files__read_file", "files__read_file", True, id="literal"),
        pytest.param("files__read_file", "files__read_files", False, id="literal-is-exact"),
        pytest.param("files__*", "files__x", True, id="star"),
        pytest.param("files__*", "files", False, id="star-needs-the-prefix"),
        pytest.param("*__delete_*", "db__delete_row", True, id="two-stars"),
        pytest.param("a__?", "a__b", True, id="question-mark"),
        pytest.param("a__?", "a__bc", False, id="question-mark-is-one-char"),
        pytest.param("a__[bc]x", "a__cx", True, id="class"),
        pytest.param("a__[!bc]x", "a__cx", False, id="negated-class"),
        pytest.param("a__[a-c]x", "a__bx", True, id="range"),
        pytest.param("*", "anything", True, id="everything"),
    ],
)
def test_globs_match_whole_names(pattern: str, name: str, matches: bool) -> None:
    assert glob_problem(pattern) is None
    assert compile_glob(pattern)(name) is matches
    assert compile_globs([pattern, "zz__never"])(name) is matches


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        pytest.param("", "empty pattern", id="empty"),
        pytest.param("a__[b", "unclosed '['", id="unclosed-class"),
        pytest.param("a__[]", "empty character class", id="empty-class"),
        pytest.param("a__[z-a]", "bad character range", id="reversed-range"),
        pytest.param("a.b", "character '.' can never match", id="dot"),
        pytest.param("a__[.]", "character '.' in a class", id="dot-in-class"),
    ],
)
def test_bad_globs_are_explained(pattern: str, problem: str) -> None:
    message = glob_problem(pattern)
    assert message is not None
    assert problem in message


def many_rules(count: int) -> list[dict[str, object]]:
    """A mix of literal, server-only and glob rules, with restrictive rules late in the list."""
    rules: list[dict[str, object]] = []
    for index in range(count):
        shape = index % 4
        if shape == 0:
            rules.append(
                {"id": f"lit-{index}", "tools": [f"s{index % 7}__t{index}"], "effect": "ask"}
            )
        elif shape == 1:
            rules.append({"id": f"srv-{index}", "servers": [f"s{index % 7}"], "effect": "allow"})
        elif shape == 2:
            rules.append({"id": f"glob-{index}", "tools": [f"s*__t{index % 50}"], "effect": "deny"})
        else:
            rules.append(
                {
                    "id": f"mix-{index}",
                    "tools": [f"s{index % 7}__t{index}"],
                    "servers": ["s1"],
                    "effect": "hide",
                }
            )
    return rules


def test_the_index_finds_exactly_the_rules_a_full_scan_finds(tmp_path: Path) -> None:
    policy = tmp_path / "many.yaml"
    policy.write_text(yaml.safe_dump({"version": 1, "rules": many_rules(400)}), encoding="utf-8")
    engine = PolicyEngine.load([policy])
    names = [f"s{s}__t{t}" for s in range(8) for t in range(0, 400, 3)]
    for name in names:
        expected = tuple(r.id for r in engine.rules if r.applies_to(name, name.split("__")[0]))
        decision = engine.evaluate_call(tool(name), {}, who(), None)
        assert decision.matched == expected, name
