"""The ``lockgate`` CLI explains itself, as a user types it (real subprocesses, real gateways):
``--version`` and help, one way to find the config, ``audit tail -c`` on either backend,
``approvals show`` and the history for people, and start-up failures of ``serve`` and problems
``doctor`` finds as one line each, naming the thing and the fix."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from gateway_faces import serve_gateway
from paths import REPO
from pg_support import PG_DSN, fresh_schema, pg_storage
from support import echo_upstream, free_port, mcp_http_client, write_config

from gateway.gateway import Gateway

ROOT = REPO
LOCKGATE = [sys.executable, "-m", "gateway.cli"]
ALICE = "alice-approver-token"
KEY = "ab" * 32


def lockgate(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``lockgate ARGS`` as a user runs it (the console script's module), never raising on a
    non-zero exit; ``env`` is added to this process's environment, without LOCKGATE_CONFIG."""
    environ = {k: v for k, v in os.environ.items() if k != "LOCKGATE_CONFIG"} | (env or {})
    environ["PYTHONPATH"] = str(ROOT)  # run from any folder, as the installed script does
    return subprocess.run(
        [*LOCKGATE, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=environ,
    )


def one_error_line(run: subprocess.CompletedProcess[str]) -> str:
    """The only line of ``run``'s stderr (no traceback, nothing around it)."""
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


# --version and help


def test_version_prints_the_installed_version() -> None:
    run = lockgate("--version")
    assert run.returncode == 0
    assert run.stdout == f"lockgate {importlib.metadata.version('lockgate')}\n"


def test_the_console_script_prints_its_version() -> None:
    script = Path(sys.executable).with_name("lockgate")
    run = subprocess.run(
        [str(script), "--version"], check=False, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.startswith("lockgate ")


@pytest.mark.parametrize(
    ("argv", "usage"),
    [
        pytest.param([], "usage: lockgate [-h] [--version]", id="bare"),
        pytest.param(["approvals"], "usage: lockgate approvals [-h] ACTION", id="group"),
    ],
)
def test_a_command_without_its_sub_command_prints_help_and_exits_0(
    argv: list[str], usage: str
) -> None:
    run = lockgate(*argv)
    assert run.returncode == 0
    assert run.stderr == ""
    assert run.stdout.startswith(usage)
    assert "positional arguments:" in run.stdout


# Finding the config: -c, then LOCKGATE_CONFIG, then configs/gateway.yaml


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    """A folder holding a copy of the bundled ``configs/``."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    return tmp_path


def test_every_command_finds_the_default_config_in_the_current_folder(bundled: Path) -> None:
    run = lockgate("doctor", cwd=bundled)
    assert "ok    config    configs/gateway.yaml loads" in run.stdout, run.stdout + run.stderr


def test_the_variable_names_the_config_when_no_flag_does(bundled: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = str(bundled / "configs" / "gateway.yaml")
    by_variable = lockgate("doctor", cwd=elsewhere, env={"LOCKGATE_CONFIG": config})
    flag_wins = lockgate("doctor", "-c", config, cwd=elsewhere, env={"LOCKGATE_CONFIG": "x.yaml"})
    assert f"ok    config    {config} loads" in by_variable.stdout
    assert f"ok    config    {config} loads" in flag_wins.stdout


@pytest.mark.parametrize(
    ("argv", "env", "origin"),
    [
        pytest.param(["tools"], {}, "the default, relative to {cwd}", id="default"),
        pytest.param(
            ["doctor"],
            {"LOCKGATE_CONFIG": "mine.yaml"},
            "from LOCKGATE_CONFIG, relative to {cwd}",
            id="variable",
        ),
        pytest.param(["serve", "-c", "/no/such.yaml"], {}, "given with -c", id="flag"),
        pytest.param(["db", "status"], {}, "the default, relative to {cwd}", id="db"),
        pytest.param(["scripts", "check"], {}, "the default, relative to {cwd}", id="scripts"),
    ],
)
def test_a_missing_config_is_one_line_naming_the_path_its_origin_and_the_fix(
    tmp_path: Path, argv: list[str], env: dict[str, str], origin: str
) -> None:
    run = lockgate(*argv, cwd=tmp_path, env=env)
    path = "/no/such.yaml" if "-c" in argv else env.get("LOCKGATE_CONFIG", "configs/gateway.yaml")
    assert run.returncode == 2
    assert one_error_line(run) == (
        f"lockgate: error: no config file at {path!r} ({origin.format(cwd=tmp_path)}): "
        "pass -c PATH or set LOCKGATE_CONFIG=PATH"
    )


def test_audit_commands_say_where_they_looked_and_offer_db(tmp_path: Path) -> None:
    run = lockgate("audit", "tail", cwd=tmp_path)
    assert run.returncode == 2
    assert one_error_line(run) == (
        f"lockgate: no config file at 'configs/gateway.yaml' (the default, relative to "
        f"{tmp_path}): pass -c PATH or set LOCKGATE_CONFIG=PATH, or --db PATH for a log file"
    )


# audit tail -c: the log the config names, on SQLite or PostgreSQL


async def _write_audit(config: Path, text: str) -> None:
    """One call through a gateway started from ``config``: its events land in the audit log."""
    async with Gateway.from_config(config) as gateway:
        await gateway.wait_ready()
        result = await gateway.call_tool("echo__echo", {"text": text})
        assert not result.is_error


def _tail_lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


async def test_audit_tail_reads_the_sqlite_log_the_config_names(tmp_path: Path) -> None:
    audit = {"audit": {"path": "logs/audit.db"}}
    config = write_config(tmp_path, [echo_upstream()], events=audit)
    (tmp_path / "logs").mkdir()
    await _write_audit(config, "on sqlite")
    by_flag = lockgate("audit", "tail", "-c", str(config), "-n", "2", cwd=ROOT)
    by_db = lockgate("audit", "tail", "--db", str(tmp_path / "logs" / "audit.db"), "-n", "2")
    lines = _tail_lines(by_flag)
    assert len(lines) == 2
    assert all(" echo__echo by anonymous" in line for line in lines)
    assert 'args={"text": "on sqlite"}' in by_flag.stdout
    assert by_flag.stdout == by_db.stdout


async def test_audit_tail_reads_the_postgres_chain_every_replica_shares(tmp_path: Path) -> None:
    async with fresh_schema() as schema:
        storage = pg_storage(schema)
        config = write_config(
            tmp_path, [echo_upstream()], storage=storage, approvals={"request_state_key": KEY}
        )
        await _write_audit(config, "on postgres")
        tail = lockgate("audit", "tail", "-c", str(config), "-n", "5", "--json")
        verified = lockgate("audit", "verify", "-c", str(config))
    entries = [line for line in _tail_lines(tail) if '"on postgres"' in line]
    assert entries, tail.stdout
    assert verified.stdout.startswith("ok: ")
    assert not (tmp_path / "var" / "audit.db").exists()  # nothing read from, or made in, SQLite
    assert PG_DSN.split("@")[0] not in tail.stderr


# approvals show and the history


TOOLS = '''
def launch(target: str) -> str:
    """Launch at a target."""
    return f"launched at {target}"


def explode(reason: str) -> str:
    """Fail on purpose."""
    raise RuntimeError(reason)
'''
POLICY = """version: 1
rules:
  - id: launches-wait
    tools: ["local__*"]
    effect: ask
    reason: launching needs a human
    approval: {hold: 0.2s}
"""


@pytest.fixture
async def held(tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    """A served gateway whose local tools are held for approval (0.2 s, then "pending"), and an
    agent client on it: ``(base URL, client)``."""
    (tmp_path / "held_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    server = {
        "name": "local",
        "transport": "python",
        "functions": ["held_tools:launch", "held_tools:explode"],
    }
    config = write_config(
        tmp_path,
        [server],
        policies={"files": ["policy.yaml"]},
        approvals={"store": "sqlite", "path": "pending.db"},
        auth={"approvers": [{"id": "user:alice", "token": ALICE}]},
    )
    async with serve_gateway(config) as url, mcp_http_client(url, "legacy", "none") as client:
        yield url.removesuffix("/mcp"), client


async def _approvals(base: str, *args: str) -> subprocess.CompletedProcess[str]:
    run = await anyio.to_thread.run_sync(
        lambda: lockgate("approvals", *args, "--url", base, "--token", ALICE)
    )
    assert run.returncode == 0, run.stderr
    return run


async def _held_id(client: Any, tool: str, args: dict[str, Any]) -> str:
    """Call ``tool``: it is held, then answered "pending"; the approval id."""
    result = await client.call_tool(tool, args)
    found = re.search(r"ap_[A-Za-z0-9_-]+", str(result.content[0].text))
    assert found is not None, result
    return found.group(0)


async def test_show_is_readable_by_default_and_json_on_request(
    held: tuple[str, Any],
) -> None:
    base, client = held
    id = await _held_id(client, "local__launch", {"target": "the moon"})
    shown = (await _approvals(base, "show", id)).stdout
    as_json = (await _approvals(base, "show", id, "--json")).stdout
    lines = shown.splitlines()
    assert lines[0] == id
    assert re.fullmatch(
        r"  state +pending, \d+[ms] left \(the caller was told 'pending'\)", lines[1]
    )
    assert lines[2] == "  tool       local__launch (server local)"
    assert re.fullmatch(r"  caller     anonymous \(session [0-9a-f]+\)", lines[3])
    assert lines[4] == "  rule       launches-wait: launching needs a human"
    assert re.search(r"\n  requested  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", shown)
    assert "\n  does       Launch at a target.\n" in shown  # the context pack: what it does
    assert re.search(
        r"\n  why        rule 'launches-wait' \(policy.yaml:3\) holds calls of "
        r"local__\*: launching needs a human\n",
        shown,
    )
    assert "\n  client     mcp 0.1.0 (http, 2025-11-25)\n" in shown
    assert re.search(r"\n  digest     sha256:[0-9a-f]{64}\n", shown)
    assert shown.endswith('  arguments:\n    {\n      "target": "the moon"\n    }\n')
    record = json.loads(as_json)
    assert record["id"] == id
    assert record["state"] == "pending"
    assert isinstance(record["created_at"], float)


async def test_history_says_whether_each_approved_call_ran_and_how_it_ended(
    held: tuple[str, Any],
) -> None:
    base, client = held
    ran = await _held_id(client, "local__launch", {"target": "mars"})
    failed = await _held_id(client, "local__explode", {"reason": "disk on fire"})
    waiting = await _held_id(client, "local__launch", {"target": "venus"})
    denied = await _held_id(client, "local__launch", {"target": "earth"})
    for id in (ran, failed, waiting):
        await _approvals(base, "approve", id)
    await _approvals(base, "deny", denied, "--message", "not today")
    done = await client.call_tool("local__launch", {"target": "mars"})  # re-issued: runs once
    boom = await client.call_tool("local__explode", {"reason": "disk on fire"})
    history = (await _approvals(base, "list", "--history")).stdout
    shown = (await _approvals(base, "show", failed)).stdout

    assert done.content[0].text == "launched at mars"
    assert boom.is_error
    header, *rows = history.splitlines()
    assert header.split() == ["ID", "WHEN", "TOOL", "CALLER", "DECISION", "OUTCOME"]
    outcomes = {row.split()[0]: re.sub(r"  +", "  ", row) for row in rows}
    assert outcomes[ran].endswith("approve by user:alice  ran: done"), history
    assert outcomes[failed].endswith(
        "approve by user:alice  ran: failed: Tool 'explode' failed: RuntimeError: disk on fire"
    )
    assert outcomes[waiting].endswith(
        "approve by user:alice  approved, not run yet: runs when the caller re-issues the call"
    )
    assert outcomes[denied].endswith("deny by user:alice  not run: denied")
    assert "\n  decided    approve by user:alice via cli\n" in shown
    assert (
        "\n  outcome    ran: failed: Tool 'explode' failed: RuntimeError: disk on fire\n" in shown
    )
    assert re.search(r"\n  updated    \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", shown)


# serve: every start-up failure is one line; doctor runs the same checks


def _serve(config: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return lockgate("serve", "-c", str(config), *args, env=env)


@pytest.fixture
def listening() -> Iterator[int]:
    """A port something else listens on."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock.getsockname()[1]


def test_serve_with_postgres_down_is_one_line_naming_the_database_and_the_fix(
    tmp_path: Path,
) -> None:
    closed = free_port()
    storage = pg_storage("lockgate", dsn=f"postgresql://postgres:hunter2@127.0.0.1:{closed}/db")
    listen = {"port": free_port()}
    config = write_config(
        tmp_path, [], storage=storage, approvals={"request_state_key": KEY}, listen=listen
    )
    run = _serve(config)
    assert run.returncode == 6
    line = one_error_line(run)
    assert line.startswith(f"lockgate: error: PostgreSQL at 127.0.0.1:{closed}/db (schema lock")
    assert line.endswith(
        "is unreachable ([Errno 111] Connection refused): start PostgreSQL "
        "there, or fix storage.dsn"
    )
    assert "hunter2" not in run.stderr


def test_serve_on_a_port_in_use_is_one_line_naming_it_and_the_fix(
    tmp_path: Path, listening: int
) -> None:
    config = write_config(tmp_path, [], listen={"port": listening})
    run = _serve(config)
    assert run.returncode == 1
    assert one_error_line(run) == (
        f"lockgate: error: port {listening} on 127.0.0.1 is already in use: stop what holds "
        "it, or choose another port with --port"
    )


UNSET = "LOCKGATE_TEST_UNSET_KEY"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(
            None,
            f"environment variable {UNSET} is not set (it should hold at least 32 bytes as "
            "hex, e.g. `openssl rand -hex 32`)",
            id="unset",
        ),
        pytest.param(
            "abcd",
            f"environment variable {UNSET} is 2 bytes; it should be at least 32 bytes as hex, "
            "e.g. `openssl rand -hex 32`",
            id="short",
        ),
        pytest.param(
            "not hex",
            f"environment variable {UNSET} is not hex; it should be at least 32 bytes as hex, "
            "e.g. `openssl rand -hex 32`",
            id="not-hex",
        ),
    ],
)
def test_a_bad_request_state_key_is_named_by_file_line_key_and_variable_by_serve_and_doctor(
    tmp_path: Path, value: str | None, problem: str
) -> None:
    config = write_config(
        tmp_path, [], approvals={"request_state_key": f"env:{UNSET}"}, listen={"port": free_port()}
    )
    env = {} if value is None else {UNSET: value}
    line = config.read_text().splitlines().index(f"  request_state_key: env:{UNSET}") + 1
    where = f"{config}:{line}:3: approvals.request_state_key: {problem}"
    served = _serve(config, env=env)
    doctor = lockgate("doctor", "-c", str(config), env=env)
    assert served.returncode == 2
    assert one_error_line(served) == f"lockgate: error: {where}"
    assert doctor.returncode == 1
    assert doctor.stdout.splitlines()[-1] == f"  - config: {where}"


def test_doctor_names_every_unset_variable_of_the_config(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [],
        storage={"backend": "postgres", "dsn": "env:LOCKGATE_TEST_UNSET_DSN"},
        approvals={"request_state_key": f"env:{UNSET}"},
        auth={
            "approvers": [{"id": "user:a", "token": "env:LOCKGATE_TEST_UNSET_TOKEN"}],
            "jwt": [
                {
                    "issuer": "https://issuer.example",
                    "audience": "lockgate",
                    "id_prefix": "idp:",
                    "as": ["agent"],
                    "algorithms": ["HS256"],
                    "secret": "env:LOCKGATE_TEST_UNSET_SECRET",
                }
            ],
        },
    )
    doctor = lockgate("doctor", "-c", str(config))
    problems = [line for line in doctor.stdout.splitlines() if line.startswith("  - ")]
    assert doctor.returncode == 1
    assert [p.split(": ")[2] for p in problems] == [
        "storage.dsn",
        "auth.approvers.0.token",
        "approvals.request_state_key",
        "auth.jwt.0.secret",  # a check that needs the gateway's code: serve's, run by doctor
    ]
    names = ("LOCKGATE_TEST_UNSET_DSN", "LOCKGATE_TEST_UNSET_TOKEN", UNSET, "_UNSET_SECRET")
    for name in names:
        assert name in doctor.stdout
