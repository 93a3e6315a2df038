"""What a newcomer meets first works: ``pip install -e .`` brings no optional extra, so every
command of the README runs without asyncpg (the ``postgres`` extra), as the user types it, on a
copy of the bundled ``configs/``; and an ``approvals`` command with no gateway serving says
where it looked and how to point elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from paths import REPO
from support import free_port

ROOT = REPO
LOCKGATE = [sys.executable, "-m", "gateway.cli"]
MISSING = "raise ModuleNotFoundError(\"No module named 'asyncpg'\", name='asyncpg')\n"


@pytest.fixture
def no_extras(tmp_path: Path) -> dict[str, str]:
    """The environment of an install without the ``postgres`` extra: an ``asyncpg`` that
    cannot be imported comes first on the path."""
    shadow = tmp_path / "shadow" / "asyncpg"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(MISSING)
    environ = {k: v for k, v in os.environ.items() if k != "LOCKGATE_CONFIG"}
    return environ | {"PYTHONPATH": os.pathsep.join([str(shadow.parent), str(ROOT)])}


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A folder holding a copy of the bundled ``configs/``, as a fresh clone has."""
    shutil.copytree(ROOT / "configs", tmp_path / "clone" / "configs")
    return tmp_path / "clone"


def lockgate(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOCKGATE, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_the_shadow_makes_asyncpg_unimportable(no_extras: dict[str, str]) -> None:
    run = subprocess.run(
        [sys.executable, "-c", "import asyncpg"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=no_extras,
    )
    assert run.returncode == 1
    assert "No module named 'asyncpg'" in run.stderr


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        pytest.param(["--version"], "lockgate ", id="version"),
        pytest.param(["doctor"], "no problems found", id="doctor"),
        pytest.param(["tools"], "files__write_file", id="tools"),
        pytest.param(
            ["call", "files__read_file", "--args", '{"path": "missing.md"}'], "", id="call"
        ),
        pytest.param(
            ["policy", "check", "configs/policies/default.yaml"], "ok: 1 file", id="check"
        ),
        pytest.param(["audit", "tail", "-n", "1"], "", id="audit-tail"),
        pytest.param(["approvals", "--help"], "usage: lockgate approvals", id="approvals"),
    ],
)
def test_the_readme_commands_run_without_the_postgres_extra(
    argv: list[str], says: str, no_extras: dict[str, str], clone: Path
) -> None:
    run = lockgate(*argv, cwd=clone, env=no_extras)
    assert "asyncpg" not in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert says in run.stdout, run.stdout + run.stderr


@pytest.fixture
def served(no_extras: dict[str, str], clone: Path) -> Iterator[subprocess.Popen[str]]:
    """``lockgate serve --port PORT`` started in the clone, without the extra; stopped after."""
    argv = [*LOCKGATE, "serve", "--port", str(free_port())]
    process = subprocess.Popen(argv, cwd=clone, env=no_extras, stderr=subprocess.PIPE, text=True)
    try:
        yield process
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_serve_starts_without_the_postgres_extra(served: subprocess.Popen[str]) -> None:
    assert served.stderr is not None
    first = served.stderr.readline()
    assert first.startswith("lockgate: serving MCP at http://127.0.0.1:"), first


def test_approvals_without_a_running_gateway_say_where_they_looked_and_how_to_point_elsewhere(
    clone: Path,
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {**os.environ, "LOCKGATE_APPROVER_TOKEN": "demo-approver-token", "LOCKGATE_URL": url}
    run = subprocess.run(
        [*LOCKGATE, "approvals", "list"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=clone,
        env=env | {"PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 1
    assert run.stderr.startswith(f"lockgate: error: cannot reach the gateway at {url} ("), (
        run.stderr
    )
    assert run.stderr.endswith(
        "): start `lockgate serve`, or point at it with --url or LOCKGATE_URL\n"
    ), run.stderr
