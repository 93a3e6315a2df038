"""The ``lockgate`` CLI as a user runs it: real subprocesses against a real echo upstream (HTTP).

The module's commands run once, concurrently (they are independent processes); each test then
checks one of them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest
from gateway_faces import CLI, ECHO_TOOLS, echo_over, lockgate, running
from support import write_config

Completed = subprocess.CompletedProcess[bytes]
COMMANDS: dict[str, list[str]] = {
    "tools": ["tools"],
    "echo": ["call", "echo__echo", "--args", '{"text": "hi there"}'],
    "fail": ["call", "echo__fail", "--args", '{"message": "disk on fire"}'],
    "wrong-type": ["call", "echo__echo", "--args", '{"text": 5}'],
    "not-json": ["call", "echo__echo", "--args", "{text: hi}"],
    "unknown-tool": ["call", "nowhere__echo", "--args", "{}"],
}


@pytest.fixture(scope="module")
async def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Completed]:
    """Every command of `COMMANDS`, run concurrently against one echo server over HTTP."""
    argv, port, url = echo_over("http", name="echo")
    config = write_config(
        tmp_path_factory.mktemp("cli"), [{"name": "echo", "transport": "http", "url": url}]
    )
    results: dict[str, Completed] = {}

    async def run(name: str, args: list[str]) -> None:
        command = [*CLI, *args, "--config", str(config)]
        results[name] = await anyio.run_process(command, check=False)

    with anyio.fail_after(60):
        async with running([(argv, port)]), anyio.create_task_group() as tg:
            for name, args in COMMANDS.items():
                tg.start_soon(run, name, args)
    return results


def _out(run: Completed) -> str:
    return run.stdout.decode()


def _last_error_line(run: Completed) -> str:
    stderr = run.stderr.decode()
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("lockgate: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


async def test_tools_prints_one_line_per_exposed_tool(
    runs: dict[str, Completed],
) -> None:
    run = runs["tools"]

    names = {line.split()[0] for line in _out(run).splitlines()}
    assert run.returncode == 0
    assert names == {f"echo__{name}" for name in ECHO_TOOLS}
    assert "echo__echo" in _out(run)
    assert "Echo the text back." in _out(run)


async def test_call_prints_the_tool_text_and_exits_0(
    runs: dict[str, Completed],
) -> None:
    run = runs["echo"]

    assert run.returncode == 0
    assert _out(run) == "hi there\n"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("fail", "disk on fire", id="upstream-error"),
        pytest.param("wrong-type", "text", id="args-against-the-schema"),
    ],
)
async def test_call_prints_an_error_result_and_exits_1(
    runs: dict[str, Completed], name: str, expected: str
) -> None:
    run = runs[name]

    assert run.returncode == 1
    assert expected in _out(run)
    assert "Traceback" not in run.stderr.decode()


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        pytest.param("not-json", 1, "lockgate: error: --args is not valid JSON", id="not-json"),
        pytest.param(
            "unknown-tool", 3, "lockgate: error: Unknown tool: 'nowhere__echo'", id="unknown-tool"
        ),
    ],
)
async def test_a_bad_call_is_one_readable_error_line(
    runs: dict[str, Completed], name: str, code: int, message: str
) -> None:
    run = runs[name]

    assert run.returncode == code
    assert run.stdout == b""
    assert _last_error_line(run).startswith(message)


async def test_args_that_are_not_json_fail_before_any_upstream_starts(
    runs: dict[str, Completed],
) -> None:
    assert runs["not-json"].stderr.decode().strip().splitlines() == [
        "lockgate: error: --args is not valid JSON: Expecting property name enclosed in double"
        " quotes at column 2"
    ]


def test_call_says_at_once_that_a_call_is_held_and_how_to_approve_it(tmp_path: Path) -> None:
    (tmp_path / "held_tools.py").write_text(
        'def launch(secret: str) -> str:\n    """Launch."""\n    return "launched"\n',
        encoding="utf-8",
    )
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\nrules:\n  - id: launches-wait\n    tools: [local__launch]\n"
        "    effect: ask\n    approval: {hold: 1s}\n",
        encoding="utf-8",
    )
    server = {"name": "local", "transport": "python", "functions": ["held_tools:launch"]}
    config = write_config(
        tmp_path,
        [server],
        policies={"files": [str(policy)]},
        approvals={"store": "sqlite", "path": str(tmp_path / "pending.db")},
    )

    run = lockgate("call", "local__launch", "--args", '{"secret": "hunter2"}', "-c", str(config))

    held = [line for line in run.stderr.splitlines() if "held for approval" in line]
    assert len(held) == 1
    id = held[0].split("approval ")[1].split(",")[0]
    assert held[0] == (
        f"lockgate: held for approval {id}, waiting up to 1 s "
        f"(approve with: lockgate approvals approve {id})"
    )
    assert (
        f"lockgate: INFO: held {id}: local__launch for anonymous (rule launches-wait)" in run.stderr
    )
    assert "hunter2" not in run.stderr  # the log never shows the arguments
    assert run.returncode == 1
    assert "waiting for an approver's decision" in run.stdout
