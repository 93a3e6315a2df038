"""``lockgate scripts check | run`` as a user runs them: real subprocesses, real sandbox."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CLI = (sys.executable, "-m", "gateway.cli")
ADD = '''\
def run(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''
HOOK = "def before_call(tool, args, ctx):\n    return None\n"


def _lockgate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def _block(text: str, indent: int) -> str:
    return textwrap.indent(text, " " * indent)


def _config(tmp_path: Path, scripts: dict[str, str], hooks: dict[str, str]) -> str:
    """A config file with literal blocks, so that each source line has a known line."""
    lines = [
        "version: 1",
        "approvals: {store: memory}",
        "events: {audit: {enabled: false}}",
        "servers:",
        "  - name: calc",
        "    transport: script",
        "    scripts:",
    ]
    for name, text in scripts.items():
        lines += [f"      - name: {name}", "        source: |", _block(text, 10)]
    lines.append("hooks:" if hooks else "hooks: []")
    for name, text in hooks.items():
        lines += [f"  - name: {name}", "    source: |", _block(text, 6)]
    path = tmp_path / "gateway.yaml"
    path.write_text("\n".join(line.rstrip("\n") for line in lines) + "\n", encoding="utf-8")
    return str(path)


def test_check_says_ok_with_the_counts(tmp_path: Path) -> None:
    config = _config(tmp_path, {"add": ADD, "sub": ADD.replace("+", "-")}, {"audit": HOOK})

    run = _lockgate("scripts", "check", "-c", config)

    assert (run.returncode, run.stdout, run.stderr) == (0, "ok: 2 scripts, 1 hook\n", "")


def test_check_prints_every_issue_with_its_line_and_exits_1(tmp_path: Path) -> None:
    leaky = "import subprocess\n\ndef run(cmd: str):\n    return compile(cmd, 'x', 'exec')\n"
    broken = "def after_call(tool, args, result, ctx)\n    return None\n"
    config = _config(tmp_path, {"add": ADD, "leaky": leaky}, {"audit": broken})

    run = _lockgate("scripts", "check", "-c", config)

    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        f"{config}:15:11: servers.0.scripts.1: 'import subprocess' does not work in the "
        "sandbox: No module named 'subprocess'",
        f"{config}:18:22: servers.0.scripts.1: 'compile' is not available in the sandbox "
        "(it has no such builtin)",
        f"{config}:22:46: hooks.0: invalid Python: expected ':'",
    ]


def test_run_calls_a_script_tool_through_the_gateway_and_prints_its_result(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, {"add": ADD}, {})

    by_name = _lockgate("scripts", "run", "add", "--args", '{"a": 2, "b": 3}', "-c", config)
    exposed = _lockgate("scripts", "run", "calc__add", "--args", '{"a": 2, "b": 3}', "-c", config)

    assert (by_name.returncode, by_name.stdout) == (0, "5\n"), by_name.stderr
    assert (exposed.returncode, exposed.stdout) == (0, "5\n"), exposed.stderr


def test_run_refuses_a_tool_that_is_not_a_script(tmp_path: Path) -> None:
    config = _config(tmp_path, {"add": ADD}, {})

    run = _lockgate("scripts", "run", "echo__echo", "-c", config)

    assert run.returncode == 1
    assert "'echo__echo' is not a script tool" in run.stderr
    assert "script tools: calc__add" in run.stderr
