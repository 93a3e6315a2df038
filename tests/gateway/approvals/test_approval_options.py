"""``lockgate policy check`` and ``explain`` know the approval options of grants, stages and
break-glass: bad values are located (file, line, key) and explained; good ones are shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.cli.policy import main

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = str(FIXTURES / "approval_options.yaml")
BAD = str(FIXTURES / "approval_options_errors.yaml")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["policy", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_locates_every_bad_grant_stage_and_break_glass_value(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "check", BAD)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"{BAD}:7:34: rules.0.approval.grants.1: Input should be 'once', 'session' or 'tool'",
        f"{BAD}:7:44: rules.0.approval.grant_max: invalid duration '2x': expected a number of"
        " seconds or a string like '15m', '50s', '1h', '500ms'",
        f"{BAD}:11:16: rules.1.approval.grants: grants must include 'once' (a plain approval of"
        " the one call)",
        f"{BAD}:11:32: rules.1.approval.grant_max: grant_max must be longer than 0s",
        f"{BAD}:17:35: rules.2.approval.stages.0.min: min 2 can never be reached: the stage"
        " names 1 user(s); name more users or a role, or lower min",
        f"{BAD}:18:12: rules.2.approval.stages.1.approvers: List should have at least 1 item"
        " after validation, not 0",
        f"{BAD}:18:27: rules.2.approval.stages.1.min: Input should be greater than or equal to 1",
        f"{BAD}:19:7: rules.2.approval.break_glass.0: invalid break-glass entry (use 'role:NAME'"
        " or 'user:ID'): 'caller'",
        f"{BAD}:25:7: rules.3.approval.stages: stages cannot offer 'edit' (the votes approve the"
        " arguments as held): drop edit from decisions",
    ]


def test_explain_shows_stages_grants_and_break_glass(capsys: pytest.CaptureFixture[str]) -> None:
    code, staged, _ = _run(capsys, "explain", "--tool", "tickets__purge_tickets", GOOD)
    assert code == 0
    assert (
        "approval: approvers role:security, user:cto; expires 15m; hold 50s; decisions approve,"
        " deny; stages 2 of role:security then 1 of user:cto; break-glass role:oncall"
    ) in staged.splitlines()
    code, granted, _ = _run(capsys, "explain", "--json", "--tool", "ci__deploy", GOOD)
    assert json.loads(granted)["approval"] == {
        "approvers": ["role:security"],
        "expires": 900.0,
        "hold": 50.0,
        "decisions": ["approve", "deny", "edit"],
        "grants": ["once", "session", "tool"],
        "grant_max": 7200.0,
        "stages": [],
        "break_glass": ["user:pager", "role:sre"],
    }
