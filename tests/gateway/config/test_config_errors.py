"""Config errors name the file, line and key; the CLI prints them as one line each, no traceback.

Each file under ``fixtures/config_errors/`` is a real broken config. Its ``# expect: LINE KEY:
MESSAGE`` comments list the issues it must produce, in order (``MESSAGE`` is a substring of the
issue's message). A ``# bug: ...`` comment marks a known bug: the case is a strict xfail.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest
from gateway_faces import lockgate
from support import echo_upstream, write_config

from gateway import load_config
from toolsets.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "config_errors"
EXPECT = re.compile(r"^# expect: (?P<line>\d+) (?P<key>[\w.]*): (?P<message>.+)$", re.MULTILINE)
BUG = re.compile(r"^# bug: (?P<reason>.+)$", re.MULTILINE)


class Expected(NamedTuple):
    line: int
    key: str
    message: str


def _expectations(path: Path) -> list[Expected]:
    text = path.read_text(encoding="utf-8")
    return [Expected(int(m["line"]), m["key"], m["message"]) for m in EXPECT.finditer(text)]


def _case(path: Path) -> pytest.ParameterSet:
    bug = BUG.search(path.read_text(encoding="utf-8"))
    marks = [pytest.mark.xfail(reason=f"BUG: {bug['reason']}", strict=True)] if bug else []
    return pytest.param(path, id=path.stem, marks=marks)


CASES = [_case(path) for path in sorted(FIXTURES.glob("*.yaml"))]
CLI_CASES = [c for c in CASES if c.id in {"unknown_server_key", "invalid_yaml", "several_problems"}]


def test_every_fixture_states_what_it_expects() -> None:
    assert len(CASES) >= 10
    assert all(_expectations(c.values[0]) for c in CASES)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", CASES)
def test_a_config_error_names_the_file_line_and_key(path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(path)

    found = [Expected(i.line or 0, i.key, i.message) for i in caught.value.issues]
    expected = _expectations(path)
    assert [(f.line, f.key) for f in found] == [(e.line, e.key) for e in expected]
    for issue, expectation in zip(caught.value.issues, expected, strict=True):
        assert expectation.message in issue.message
        assert issue.file == str(path)
        assert issue.column is not None


@pytest.mark.parametrize("path", CLI_CASES)
def test_the_cli_reports_a_config_error_in_readable_lines_and_exits_2(path: Path) -> None:
    run = lockgate("tools", "--config", str(path))

    lines = run.stderr.strip().splitlines()
    expected = _expectations(path)
    assert run.returncode == 2
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    assert len(lines) == len(expected)
    assert lines[0].startswith(f"lockgate: error: {path}:{expected[0].line}:")
    for line, expectation in zip(lines, expected, strict=True):
        assert f":{expectation.line}:" in line
        assert f" {expectation.key}: " in line or not expectation.key
        assert expectation.message in line


def test_a_missing_config_file_is_one_readable_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"

    run = lockgate("tools", "--config", str(missing))

    assert run.returncode == 2
    assert run.stderr.strip() == (
        f"lockgate: error: no config file at {str(missing)!r} (given with -c): "
        "pass -c PATH or set LOCKGATE_CONFIG=PATH"
    )


def test_a_valid_config_loads(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, [echo_upstream("echo", prefix="e")]))

    assert [s.exposed_prefix for s in config.enabled_servers()] == ["e"]
    assert config.base_dir == tmp_path.resolve()


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"events": {"audit": {"enabled": True, "path": "taken/audit.db"}}}, "events.audit.path"),
        ({"approvals": {"store": "sqlite", "path": "taken/pending.db"}}, "approvals.path"),
    ],
)
def test_a_data_path_that_cannot_be_written_is_one_line_naming_it_and_its_setting(
    tmp_path: Path, section: dict[str, object], key: str
) -> None:
    (tmp_path / "taken").write_text("a file where a folder should be", encoding="utf-8")
    config = write_config(tmp_path, [], **section)

    run = lockgate("tools", "--config", str(config))

    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        f"lockgate: error: cannot create the folder of {tmp_path / 'taken'}/"
        f"{'audit' if key.startswith('events') else 'pending'}.db (File exists): "
        f"fix {key} in the config"
    ]
