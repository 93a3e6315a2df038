"""``lockgate policy check | explain | test``, in-process and as a subprocess."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from policy_support import DEFAULT_CASES, DEFAULT_POLICY, FIXTURES, REPO, engine

from gateway.cli.policy import register

EFFECTS = str(FIXTURES / "effects.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="lockgate")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["policy", *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_check_accepts_valid_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", str(DEFAULT_POLICY), EFFECTS)
    assert (code, err) == (0, "")
    assert out.startswith("ok: 2 files, 20 rules, version ")


def test_check_lists_every_error_with_its_location(capsys: pytest.CaptureFixture[str]) -> None:
    bad = FIXTURES / "errors" / "bad_glob.yaml"
    code, out, err = run(capsys, "check", str(bad))
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{bad}:4:13: rules.0.tools.0: invalid glob 'files__[read': unclosed '['",
        f"{bad}:4:29: rules.0.tools.1: invalid glob 'files/read': character '/' can never match"
        " a name (names use letters, digits, '_' and '-'; globs add '*', '?' and '[...]')",
    ]


def test_explain_prints_the_decision_the_winner_and_every_match(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "explain", "--tool", "notes__purge", "--args", '{"token": "t"}', EFFECTS
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:5] == [
        "effect:   deny",
        f"rule:     deny-notes-purge ({EFFECTS}:33)",
        "reason:   matched rule 'deny-notes-purge'",
        "message:  Purging notes is off.",
        "redact:   args.token, args.headers.authorization",
    ]
    assert lines[5:10] == [
        "matched:",
        f"  allow-all-notes         allow  {EFFECTS}:25",
        f"  ask-notes-purge         ask    {EFFECTS}:29",
        f"  deny-notes-purge        deny   {EFFECTS}:33",
        f"  deny-notes-purge-again  deny   {EFFECTS}:37",
    ]


def test_explain_json_with_principal_roles_and_server(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "explain",
        "--json",
        "--tool",
        "tickets__purge_tickets",
        "--principal",
        "user:alice",
        "--role",
        "admin",
        "--role",
        "dev",
        str(DEFAULT_POLICY),
    )
    explained = json.loads(out)
    assert code == 0
    assert (explained["effect"], explained["rule"]) == ("ask", "purge-needs-security")
    assert explained["approval"] == {
        "approvers": ["role:security"],
        "expires": 900.0,
        "hold": 50.0,
        "decisions": ["approve", "deny"],
        "grants": ["once"],
        "grant_max": 3600.0,
        "stages": [],
        "break_glass": [],
    }
    assert [m["id"] for m in explained["matched"]] == ["purge-needs-security"]
    assert explained["files"] == [str(DEFAULT_POLICY)]


def test_explain_overrides_the_server_and_evaluates_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        capsys, "explain", "--json", "--list", "--tool", "x__run", "--server", "shell", EFFECTS
    )
    assert code == 0
    assert (json.loads(out)["effect"], json.loads(out)["rule"]) == ("deny", "deny-shell")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        pytest.param("--args", "{oops", "--args is not valid JSON", id="bad-json"),
        pytest.param("--args", "[1]", "--args must be a JSON object, got list", id="not-an-object"),
        pytest.param("--annotations", "1", "--annotations must be a JSON object", id="annotations"),
    ],
)
def test_explain_reports_unusable_values_in_one_line(
    capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    code, out, err = run(capsys, "explain", "--tool", "a__b", option, value, EFFECTS)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"lockgate policy explain: error: {message}")


def test_test_passes_the_default_policy_cases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "test", str(DEFAULT_CASES))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "17 passed, 0 failed"
    assert "FAIL" not in out


def test_test_reports_each_failing_expectation(capsys: pytest.CaptureFixture[str]) -> None:
    cases = FIXTURES / "effects.cases.yaml"
    code, out, _ = run(capsys, "test", str(cases))
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == [
        f"PASS reading notes is allowed ({cases}:4)",
        f"PASS admin tools are hidden from listings ({cases}:7)",
    ]
    assert lines[2:7] == [
        f"FAIL wrong effect ({cases}:10)",
        "     effect: expected 'allow', got 'deny'",
        f"FAIL wrong rule and matched list ({cases}:13)",
        "     rule: expected 'deny-notes-purge-again', got 'deny-notes-purge'",
        "     matched: expected ['deny-notes-purge'], got ['allow-all-notes', 'ask-notes-purge',"
        " 'deny-notes-purge', 'deny-notes-purge-again']",
    ]
    assert lines[-1] == "2 passed, 2 failed"


def test_test_policy_option_replaces_the_case_file_policies(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "test", str(DEFAULT_CASES), "--policy", EFFECTS)
    assert code == 1
    assert f"policy version {engine('effects.yaml').version}: {EFFECTS}" in out


def test_test_reports_an_invalid_case_file_with_locations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cases = FIXTURES / "broken.cases.yaml"
    code, _, err = run(capsys, "test", str(cases))
    assert code == 1
    assert err.splitlines() == [
        f"{cases}:4:31: cases.0.call.argz: unknown key",
        f"{cases}:3:5: cases.0.expect: required key is missing",
    ]


def test_the_module_runs_as_a_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli.policy", "policy", "test", str(DEFAULT_CASES)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == "17 passed, 0 failed"


def _check(module: str, bad: Path) -> subprocess.CompletedProcess[str]:
    """``policy check`` of ``bad`` through ``python -m module``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", module, "policy", "check", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_module_reports_errors_without_a_traceback() -> None:
    bad = FIXTURES / "errors" / "cel_variable.yaml"
    result = _check("gateway.cli.policy", bad)
    assert result.returncode == 1
    assert result.stderr == (
        f"{bad}:5:5: rules.0.unless: unknown CEL variable 'user' "
        "(allowed: args, principal, prompt, resource, session, tool)\n"
    )


def test_policy_check_refuses_a_cel_function_that_does_not_exist() -> None:
    bad = FIXTURES / "errors" / "cel_function.yaml"
    result = _check("gateway.cli", bad)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"{bad}:5:5: rules.0.when: unknown CEL function 'startswith' (did you mean 'startsWith'?)",
        f"{bad}:9:5: rules.1.unless: 'matches' is a method in CEL: write x.matches(...), not "
        "matches(x, ...)",
    ]
