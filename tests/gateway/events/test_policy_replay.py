"""``lockgate policy replay``: real calls recorded through a gateway into its audit log are
decided again with another policy, session histories rebuilt as they happened."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import write_config

from gateway.audit.log import read_entries
from gateway.cli.main import build_parser
from gateway.cli.replay import since_timestamp
from gateway.gateway import Gateway
from policies import PolicyEngine
from toolsets.context import CallContext, Principal

FIXTURES = Path(__file__).parent / "fixtures"
RECORDED = FIXTURES / "replay_recorded.yaml"
NEW = FIXTURES / "replay_new.yaml"

CRM = '''
def get_record(record_id: str) -> dict:
    """Read a record."""
    return {"id": record_id}


def delete_record(record_id: str) -> str:
    """Delete a record."""
    return f"deleted {record_id}"


def purge() -> str:
    """Delete everything."""
    return "purged"


def login(user: str, password: str) -> str:
    """Log in."""
    return f"hello {user}"


def export() -> str:
    """Export everything."""
    return "exported"


def report() -> str:
    """Sum up the records."""
    return "3 records"
'''

TRAFFIC: list[tuple[str, str, dict[str, Any]]] = [
    # (session, tool, args): what each got recorded, then (replayed) with replay_new.yaml
    ("a", "crm__delete_record", {"record_id": "R1"}),  # deny: not read (same)
    ("a", "crm__get_record", {"record_id": "R1"}),  # allow (same: 0 calls before)
    ("a", "crm__delete_record", {"record_id": "R1"}),  # allow: read first (same, from history)
    ("a", "crm__purge", {}),  # deny (allow: no rule now)
    ("a", "crm__login", {"user": "ann", "password": "hunter2"}),  # allow, redacted (same)
    ("a", "crm__get_record", {"record_id": "R2"}),  # allow (deny: 3 calls in session a)
    ("a", "crm__export", {}),  # ask, held, answered "pending" (deny)
    ("a", "crm__get_record", {"record_id": "R4"}),  # allow (deny: the held export counts)
    ("b", "crm__get_record", {"record_id": "R3"}),  # allow (same: session b is new)
    ("b", "crm__delete_record", {"record_id": "R1"}),  # deny: not read in b (same)
    ("b", "load_reports", {}),  # allow: loads the group (same)
    ("b", "crm__report", {}),  # allow: its group is loaded (same, from history)
]
RECORDED_EFFECTS = ["deny", "allow", "allow", "deny", "allow", "allow", "ask", "allow"]
RECORDED_EFFECTS += ["allow", "deny", "allow", "allow"]


def crm_gateway(directory: Path) -> Path:
    (directory / "replay_crm.py").write_text(textwrap.dedent(CRM), encoding="utf-8")
    names = ("get_record", "delete_record", "purge", "login", "export", "report")
    crm = {"name": "crm", "transport": "python", "functions": [f"replay_crm:{n}" for n in names]}
    return write_config(
        directory,
        [crm],
        policies={"files": [str(RECORDED)]},
        approvals={"store": "memory"},
        events={"audit": {"enabled": True, "path": "audit.db"}},
    )


async def record_traffic(config: Path) -> None:
    with anyio.fail_after(30):
        async with Gateway.from_config(config) as gateway:
            for session, name, args in TRAFFIC:
                ctx = CallContext(principal=Principal(id=f"agent:{session}"), session_id=session)
                await gateway.call_tool(name, args, ctx)


@pytest.fixture(scope="module")
async def audit(tmp_path_factory: pytest.TempPathFactory, anyio_backend: str) -> Path:
    """An audit log holding `TRAFFIC` as a real gateway recorded it (the gateway stopped, so
    the log is complete). Recorded on the anyio plugin's runner, never by ``anyio.run``: that
    fails while a wider-scoped async fixture of another suite holds the runner."""
    directory = tmp_path_factory.mktemp("replay")
    await record_traffic(crm_gateway(directory))
    return directory / "audit.db"


def decisions(audit: Path) -> list[Mapping[str, Any]]:
    kinds = ("tool.call", "tool.denied", "tool.approval.requested")
    return [entry.body["data"] for entry in read_entries(audit, kinds)]


def replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(["policy", "replay", *argv])
    code: int = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_recorded_traffic_is_what_the_recorded_policy_decided(audit: Path) -> None:
    recorded = decisions(audit)
    assert [d["decision"]["effect"] for d in recorded] == RECORDED_EFFECTS
    assert recorded[4]["args"] == {"user": "ann", "password": "[REDACTED]"}


def test_replaying_with_the_recorded_policy_changes_nothing(
    audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = replay(capsys, "--audit", str(audit), str(RECORDED))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    version = PolicyEngine.load([RECORDED]).version
    assert lines[0] == f"replayed 12 calls from {audit} with policy {version} ({RECORDED})"
    assert lines[1:3] == ["no decision changes", "total: 12 calls, 0 changed, 12 unchanged"]


def test_the_diff_table_shows_each_change_with_its_new_rule_and_count(
    audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = replay(capsys, "--audit", str(audit), str(NEW))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    version = PolicyEngine.load([NEW]).version
    assert lines[:7] == [
        f"replayed 12 calls from {audit} with policy {version} ({NEW})",
        "tool             old -> new     new rule                   calls",
        "crm__export      ask -> deny    no-exports                 1",
        "crm__get_record  allow -> deny  no-reads-after-an-export   1",
        "crm__get_record  allow -> deny  three-calls-then-no-reads  1",
        "crm__purge       deny -> allow  (defaults)                 1",
        "total: 12 calls, 4 changed (ask -> deny 1, allow -> deny 2, deny -> allow 1), 8 unchanged",
    ]
    notes = lines[7:]
    assert notes[0].startswith("note: tools are rebuilt from the recorded tool and server names")
    assert notes[1].startswith("note: principals are replayed by id and tenant")
    assert notes[2] == (
        "note: 1 replayed call had redacted arguments: the new policy saw '[REDACTED]' where "
        "rules masked them"
    )


def test_all_rows_include_unchanged_ones_and_mark_redacted_arguments(
    audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = replay(capsys, "--audit", str(audit), "--all", str(NEW))
    assert code == 0
    assert out.splitlines()[1:13] == [
        "tool                old -> new      new rule                   calls",
        "crm__export         ask -> deny     no-exports                 1",
        "crm__get_record     allow -> deny   no-reads-after-an-export   1",
        "crm__get_record     allow -> deny   three-calls-then-no-reads  1",
        "crm__purge          deny -> allow   (defaults)                 1",
        "crm__delete_record  allow -> allow  (defaults)                 1",
        "crm__delete_record  deny -> deny    delete-after-read          2",
        "crm__get_record     allow -> allow  (defaults)                 2",
        "crm__login          allow -> allow  (defaults)                 1 (1 with redacted args)",
        "crm__report         allow -> allow  (defaults)                 1",
        "load_reports        allow -> allow  (defaults)                 1",
        "total: 12 calls, 4 changed (ask -> deny 1, allow -> deny 2, deny -> allow 1), 8 unchanged",
    ]


def row(tool: str, old: str, new: str, rule: str | None) -> dict[str, Any]:
    """A JSON row of one call without redacted arguments."""
    keys = ("tool", "old_effect", "new_effect", "new_rule_id")
    return dict(zip(keys, (tool, old, new, rule), strict=True)) | {"count": 1, "redacted": 0}


def test_json_output_carries_the_rows_totals_and_notes(
    audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = replay(capsys, "--audit", str(audit), "--json", str(NEW))
    assert code == 0
    data = json.loads(out)
    recorded = read_entries(audit, ("tool.denied", "tool.call", "tool.approval.requested"))
    times = [entry.ts for entry in recorded]
    assert {k: v for k, v in data.items() if k != "notes"} == {
        "audit": str(audit),
        "since": None,
        "policy": {"version": PolicyEngine.load([NEW]).version, "files": [str(NEW)]},
        "calls": 12,
        "changed": 4,
        "unchanged": 8,
        "redacted": 1,
        "first": times[0],
        "last": times[-1],
        "skipped": 0,
        "rows": [
            row("crm__export", "ask", "deny", "no-exports"),
            row("crm__get_record", "allow", "deny", "no-reads-after-an-export"),
            row("crm__get_record", "allow", "deny", "three-calls-then-no-reads"),
            row("crm__purge", "deny", "allow", None),
        ],
        "newly_held": [],
    }
    assert len(data["notes"]) == 3


def test_since_counts_later_calls_only_but_replays_earlier_session_history(
    audit: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sixth = [
        e for e in read_entries(audit, ("tool.call",)) if e.body["data"]["args"] == TRAFFIC[5][2]
    ]
    since = sixth[0].ts
    code, out, _ = replay(
        capsys, "--audit", str(audit), "--since", since, "--json", "--all", str(NEW)
    )
    assert code == 0
    data = json.loads(out)
    assert (data["since"], data["calls"], data["changed"], data["first"]) == (since, 7, 3, since)
    assert [(r["tool"], r["old_effect"], r["new_effect"], r["count"]) for r in data["rows"]] == [
        ("crm__export", "ask", "deny", 1),
        ("crm__get_record", "allow", "deny", 1),  # R4: the held export counts in session a
        ("crm__get_record", "allow", "deny", 1),  # R2: the three calls before --since count
        ("crm__delete_record", "deny", "deny", 1),
        ("crm__get_record", "allow", "allow", 1),
        ("crm__report", "allow", "allow", 1),
        ("load_reports", "allow", "allow", 1),
    ]
    code, out, _ = replay(capsys, "--audit", str(audit), "--since", "1h", "--json", str(NEW))
    assert (code, json.loads(out)["calls"]) == (0, 12)


def test_since_takes_a_duration_or_an_iso_time() -> None:
    now = datetime(2025, 3, 10, 12, 0, tzinfo=UTC)
    assert since_timestamp("7d", now) == "2025-03-03T12:00:00.000000Z"
    assert since_timestamp("90m", now) == "2025-03-10T10:30:00.000000Z"
    assert since_timestamp("2025-03-01") == "2025-03-01T00:00:00.000000Z"
    assert since_timestamp("2025-03-01T10:00:00+02:00") == "2025-03-01T08:00:00.000000Z"
    with pytest.raises(ValueError, match="neither a duration"):
        since_timestamp("last week")


def test_a_bad_since_is_a_usage_error(audit: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = replay(capsys, "--audit", str(audit), "--since", "yesterday", str(NEW))
    assert (code, out) == (2, "")
    assert err == (
        "lockgate policy replay: error: --since 'yesterday' is neither a duration (7d, 12h, 30m) "
        "nor an ISO date/time\n"
    )


def test_a_missing_audit_log_is_one_line_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "var" / "audit.db"
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        "policy",
        "replay",
        "--audit",
        str(missing),
    ]
    done = subprocess.run([*command, str(NEW)], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"lockgate policy replay: error: no audit log at {str(missing)!r} "
        "(the gateway writes it at events.audit.path once it ran calls)\n"
    )
