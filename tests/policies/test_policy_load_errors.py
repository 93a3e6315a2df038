"""Every class of load error is reported with file, line, column and key, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from policy_support import FIXTURES

from policies import PolicyEngine
from toolsets.errors import ConfigIssue, PolicyError

ERRORS = FIXTURES / "errors"
EXPECTED: dict[str, list[list[object]]] = yaml.safe_load(
    (ERRORS / "expected.yaml").read_text(encoding="utf-8")
)


def load_issues(*paths: Path) -> tuple[ConfigIssue, ...]:
    with pytest.raises(PolicyError) as caught:
        PolicyEngine.load(paths)
    return caught.value.issues


@pytest.mark.parametrize(
    ("name", "expected"), [pytest.param(name, issues, id=name) for name, issues in EXPECTED.items()]
)
def test_every_issue_of_a_broken_file_is_located(name: str, expected: list[list[object]]) -> None:
    issues = load_issues(ERRORS / name)
    assert [(i.file, i.line, i.column, i.key) for i in issues] == [
        (str(ERRORS / name), line, column, key) for line, column, key, _ in expected
    ]
    for issue, (*_, message) in zip(issues, expected, strict=True):
        assert str(message) in issue.message


def test_every_broken_fixture_has_expectations() -> None:
    broken = {p.name for p in ERRORS.glob("*.yaml")} - {"expected.yaml"}
    assert broken == set(EXPECTED)


def test_errors_of_all_files_are_reported_together() -> None:
    issues = load_issues(
        ERRORS / "cel_syntax.yaml", FIXTURES / "effects.yaml", ERRORS / "bad_glob.yaml"
    )
    assert [(Path(i.file).name, i.key) for i in issues] == [
        ("cel_syntax.yaml", "rules.0.when"),
        ("bad_glob.yaml", "rules.0.tools.0"),
        ("bad_glob.yaml", "rules.0.tools.1"),
    ]


def test_a_rule_id_used_in_an_earlier_layer_is_a_duplicate() -> None:
    issues = load_issues(FIXTURES / "layers" / "org.yaml", FIXTURES / "layers" / "org.yaml")
    org = FIXTURES / "layers" / "org.yaml"
    assert [(i.line, i.column, i.key, i.message) for i in issues] == [
        (
            10,
            5,
            "rules.0.id",
            f"duplicate rule id 'org-no-prod-deploy' (first defined at {org}:10)",
        ),
        (14, 5, "rules.1.id", f"duplicate rule id 'org-ask-db' (first defined at {org}:14)"),
    ]


def test_a_missing_file_is_an_issue_of_that_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    assert load_issues(missing) == (
        ConfigIssue(str(missing), None, None, "", "cannot read: No such file or directory"),
    )


def test_loading_no_files_is_an_error() -> None:
    assert [i.message for i in load_issues()] == ["no policy files given"]


def test_an_empty_file_lacks_the_version(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    assert [(i.key, i.message) for i in load_issues(empty)] == [
        ("version", "required key is missing")
    ]


@pytest.mark.parametrize(
    "condition",
    [
        pytest.param('principal.roles.exists(r, r == "admin")', id="exists"),
        pytest.param("args.items.all(i, i > 0)", id="all"),
        pytest.param("args.items.map(x, x * 2).exists_one(y, y == 4)", id="chained-macros"),
        pytest.param('args.names.filter(n, n.startsWith("a")).size() > 0', id="filter"),
    ],
)
def test_comprehension_variables_are_not_unknown_variables(tmp_path: Path, condition: str) -> None:
    policy = tmp_path / "policy.yaml"
    rule = {"id": "r", "tools": ["a__b"], "when": condition, "effect": "deny"}
    policy.write_text(yaml.safe_dump({"version": 1, "rules": [rule]}), encoding="utf-8")
    assert [rule.id for rule in PolicyEngine.load([policy]).rules] == ["r"]


def test_a_variable_named_like_a_macro_argument_inside_a_string_is_still_unknown(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.yaml"
    rule = {"id": "r", "when": 'x == "a.exists(x, true)"', "effect": "deny"}
    policy.write_text(yaml.safe_dump({"version": 1, "rules": [rule]}), encoding="utf-8")
    assert [i.message for i in load_issues(policy)] == [
        "unknown CEL variable 'x' (allowed: args, principal, prompt, resource, session, tool)"
    ]
