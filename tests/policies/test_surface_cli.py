"""``lockgate policy check | explain | test`` know rules over resources and prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from policy_support import FIXTURES

from gateway.cli.policy import main

SURFACE = FIXTURES / "surface"
POLICY = str(SURFACE / "surface.yaml")


def policy(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["policy", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_explain_shows_the_rule_deciding_a_read_and_its_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    uri = "file:///srv/../etc/hosts"
    code, out, err = policy(capsys, "explain", "--resource", uri, "--server", "files", POLICY)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:4] == [
        "effect:   deny",
        f"rule:     no-etc ({POLICY}:12)",
        "reason:   system configuration stays private",
        'message:  Reading "file:///etc/hosts" is not allowed through this gateway.',
    ]


def test_explain_of_a_held_read_shows_its_approval(capsys: pytest.CaptureFixture[str]) -> None:
    uri = "file:///var/log/auth.log"
    code, out, _ = policy(capsys, "explain", "--resource", uri, "--server", "files", POLICY)
    assert code == 0
    assert "effect:   ask" in out
    assert "approval: approvers role:security; expires 15m; hold 2s; decisions approve, deny" in out


def test_explain_decides_a_prompt_get_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = json.dumps({"command": "rm -rf /", "token": "t"})
    code, out, _ = policy(
        capsys, "explain", "--json", "--prompt", "ops__run", "--args", args, POLICY
    )
    decision = json.loads(out)
    assert (code, decision["effect"], decision["rule"]) == (0, "deny", "no-rm")
    assert decision["redact"] == ["args.token"]
    assert "<redacted args.token>" in decision["message"]


def test_explain_list_decides_whether_a_template_is_listed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    template = "memo://secrets/{name}"
    argv = ("explain", "--list", "--resource", template, "--server", "memo", POLICY)
    code, out, _ = policy(capsys, *argv)
    assert code == 0
    assert out.splitlines()[:2] == ["effect:   hide", f"rule:     hide-secrets ({POLICY}:17)"]


def test_explain_of_a_resource_needs_its_server(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = policy(capsys, "explain", "--resource", "file:///x", POLICY)
    assert (code, out) == (2, "")
    assert (
        err == "lockgate policy explain: error: --resource needs --server (a URI names no server)\n"
    )


def test_explain_takes_one_of_tool_resource_or_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["policy", "explain", "--tool", "a__b", "--prompt", "a__c", POLICY])
    assert exited.value.code == 2
    assert "argument --prompt: not allowed with argument --tool" in capsys.readouterr().err


def test_check_reports_misused_resource_and_prompt_rules_located(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = SURFACE / "errors.yaml"
    code, out, err = policy(capsys, "check", POLICY, str(bad))
    assert (code, out) == (1, "")
    assert f"{bad}:16:5: rules.2.effect: effect 'ask' is not for prompts" in err
    assert len(err.splitlines()) == 14


def test_policy_test_runs_resource_and_prompt_cases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = policy(capsys, "test", str(SURFACE / "surface.cases.yaml"))
    assert code == 0
    assert out.splitlines()[-1] == "9 passed, 0 failed"


def test_a_case_naming_a_tool_and_a_resource_is_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cases = tmp_path / "bad.cases.yaml"
    cases.write_text(
        f"policies: [{POLICY}]\n"
        "cases:\n"
        "  - name: both\n"
        "    call: {tool: a__b, resource: 'file:///x', server: a}\n"
        "    expect: {effect: allow}\n"
        "  - name: no server\n"
        "    call: {resource: 'file:///x'}\n"
        "    expect: {effect: allow}\n",
        encoding="utf-8",
    )
    code, _, err = policy(capsys, "test", str(cases))
    assert code == 1
    assert err.splitlines() == [
        f"{cases}:4:5: cases.0.call: name exactly one of tool, resource or prompt "
        "(got ['tool', 'resource'])",
        f"{cases}:7:5: cases.1.call: a resource needs its server (a URI has no server prefix)",
    ]
