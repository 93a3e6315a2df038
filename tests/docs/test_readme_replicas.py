"""The "Scaling out on PostgreSQL" recipe of docs/postgres.md, run as written on a copy of
``configs/``: migrate, doctor, two replicas, a call held on A approved through B with the page's
commands (it runs once, on A), ``db status`` and ``audit verify`` against the database.

The copy's config names a fresh schema (dropped afterwards) and the page's ports are replaced
with free ones; everything else is the page's text.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from pg_support import drop_schema
from readme_support import (
    APPROVER_TOKEN,
    ROOT,
    argv_of,
    commands,
    first_line_with,
    run,
    section,
)
from support import free_port

PAGE = (ROOT / "docs" / "postgres.md").read_text(encoding="utf-8")
RECIPE = section(PAGE, "Scaling out on PostgreSQL")


def exported(name: str) -> str:
    """The value the section's ``export NAME=...`` line gives."""
    found = re.search(rf"^export {name}=(\S+)", RECIPE, re.M)
    assert found is not None, f"docs/postgres.md no longer exports {name}"
    return found.group(1)


@pytest.fixture
async def recipe(tmp_path: Path) -> AsyncIterator[tuple[Path, dict[str, str], str]]:
    """A copy of ``configs/`` whose replicas config names a fresh schema; the environment the
    recipe exports; the schema (dropped at the end)."""
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    schema = f"lockgate_readme_{secrets.token_hex(4)}"
    config = tmp_path / "configs" / "replicas.yaml"
    config.write_text(config.read_text().replace("schema: lockgate\n", f"schema: {schema}\n"))
    env = {
        "LOCKGATE_DATABASE_URL": exported("LOCKGATE_DATABASE_URL"),
        "LOCKGATE_REQUEST_STATE_KEY": secrets.token_hex(32),
    }
    try:
        yield tmp_path, env, schema
    finally:
        await drop_schema(schema)


async def test_the_recipe_runs_two_replicas_and_a_call_held_on_a_is_decided_on_b(
    recipe: tuple[Path, dict[str, str], str],
) -> None:
    workdir, env, _ = recipe
    migrate, doctor, serve_a, serve_b, listing, approve, status, verify = commands(RECIPE)
    assert [c.split()[1:3] for c in (migrate, doctor, status, verify)] == [
        ["db", "migrate"],
        ["doctor", "-c"],
        ["db", "status"],
        ["audit", "verify"],
    ]
    migrated = run(migrate, workdir, env)
    assert migrated.returncode == 0, migrated.stderr
    checked = run(doctor, workdir, env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    a, b = free_port(), free_port()
    ports = {"8766": str(a), "8767": str(b)}
    replicas = [_serve(command, workdir, env, ports) for command in (serve_a, serve_b)]
    try:
        await _hold_on_a_and_approve_on_b(workdir, env, a, (listing, approve), ports)
    finally:
        for replica in replicas:
            replica.terminate()
            replica.communicate(timeout=15)
    assert run(status, workdir, env).returncode == 0
    verified = run(verify, workdir, env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("ok:")


def _serve(
    command: str, workdir: Path, env: dict[str, str], ports: dict[str, str]
) -> subprocess.Popen[str]:
    assert command.endswith(" &")  # started in the background, as the page says
    argv = argv_of(command.removesuffix(" &"), **ports)
    replica = subprocess.Popen(
        argv, cwd=workdir, env=_environ(env), stderr=subprocess.PIPE, text=True
    )
    assert replica.stderr is not None
    assert "serving MCP at" in first_line_with(replica.stderr, "lockgate: serving")
    return replica


async def _hold_on_a_and_approve_on_b(
    workdir: Path, env: dict[str, str], a: int, commands: tuple[str, str], ports: dict[str, str]
) -> None:
    """The quickstart's Python snippet (an MCP client) holds a call on A; the page's commands
    list and approve it on B; the held call completes on A."""
    listing, approve = commands
    async with Client(f"http://127.0.0.1:{a}/mcp") as client, anyio.create_task_group() as tg:
        tg.start_soon(_approve_on_b, workdir, env, listing, approve, ports)
        result = await client.call_tool("files__write_file", {"path": ".env", "content": "K=1"})
    assert "wrote 3 bytes" in str(getattr(result.content[0], "text", ""))
    assert (workdir / "var" / "workspace" / ".env").read_text() == "K=1"


async def _approve_on_b(
    workdir: Path, env: dict[str, str], listing: str, approve: str, ports: dict[str, str]
) -> None:
    with anyio.fail_after(60):  # the page's listing, a process each time: poll it
        while not (
            found := re.search(r"ap_[A-Za-z0-9_-]+", await _run(listing, workdir, env, ports))
        ):
            await anyio.sleep(0.2)
    await _run(approve, workdir, env, ports | {"ap_...": found.group(0)})


async def _run(command: str, workdir: Path, env: dict[str, str], replace: dict[str, str]) -> str:
    done = await anyio.to_thread.run_sync(lambda: run(command, workdir, env, **replace))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _environ(env: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "LOCKGATE_APPROVER_TOKEN": APPROVER_TOKEN, **env}
