"""``lockgate db status | migrate`` and ``lockgate doctor`` as subprocesses, on a fresh schema:
migrating, concurrent migrations, an unreachable database and a schema newer than the code,
each named with the fix (and never a password)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import asyncpg
import pytest
from pg_support import PG_DSN, fresh_schema, pg_settings, pg_storage
from support import free_port, write_config

from gateway.approvals.errors import PendingStoreError
from gateway.cli.doctor import diagnose
from gateway.gateway import Gateway
from gateway.postgres.database import Database
from gateway.postgres.migrations import MIGRATIONS, SCHEMA_VERSION, migrate


async def lockgate(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``lockgate ARGS`` in a subprocess; never raises on a non-zero exit."""
    command = [sys.executable, "-m", "gateway.cli", *args]
    return await anyio.run_process(command, check=False)


def _config(directory: Path, schema: str, dsn: str = PG_DSN, *, sealed: bool = True) -> str:
    """A config on ``schema``; ``sealed``: with the request-state key replicas must share."""
    approvals = {"request_state_key": "ab" * 32} if sealed else {}
    storage = pg_storage(schema, dsn=dsn)
    return str(write_config(directory, [], storage=storage, approvals=approvals))


async def test_status_migrate_and_doctor_walk_a_new_schema_to_current(tmp_path: Path) -> None:
    async with fresh_schema() as schema:
        config = _config(tmp_path, schema)
        before = await lockgate("db", "status", "-c", config)
        first, second = await _both("db", "migrate", "-c", config)
        doctor = await lockgate("doctor", "-c", config)
        conn = await asyncpg.connect(PG_DSN)
        versions = await conn.fetch(f'SELECT version FROM "{schema}".schema_version')
        await conn.close()
    where = f"PostgreSQL at 127.0.0.1:5432/postgres (schema {schema})"
    assert before.returncode == 1
    assert before.stdout.decode() == (
        f"{where}: schema version 0, {SCHEMA_VERSION} expected: run lockgate db migrate "
        "(the gateway also migrates when it starts)\n"
    )
    outputs = sorted(p.stdout.decode() for p in (first, second))
    assert [p.returncode for p in (first, second)] == [0, 0]
    assert outputs == [
        f"{where}: migrated from schema version 0 to {SCHEMA_VERSION}\n",
        f"{where}: schema version {SCHEMA_VERSION}, nothing to migrate\n",
    ]  # two at once: the advisory lock makes one migrate and the other find it done
    assert [row[0] for row in versions] == list(range(1, SCHEMA_VERSION + 1))
    assert doctor.returncode == 0
    up_to_date = f"ok    storage   {where}: schema version {SCHEMA_VERSION} (up to date)\n"
    assert up_to_date in doctor.stdout.decode()
    assert doctor.stdout.decode().endswith("no problems found\n")


async def _both(*args: str) -> list[subprocess.CompletedProcess[bytes]]:
    """``lockgate ARGS`` twice, at the same time."""
    done: list[subprocess.CompletedProcess[bytes]] = []

    async def run() -> None:
        done.append(await lockgate(*args))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        tg.start_soon(run)
    return done


async def test_an_unreachable_database_is_named_with_its_fix_and_no_password(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing listens there
    config = _config(tmp_path, "lockgate", dsn=f"postgresql://postgres:hunter2@127.0.0.1:{port}/db")
    status = await lockgate("db", "status", "-c", config)
    doctor = await lockgate("doctor", "-c", config)
    message = f"PostgreSQL at 127.0.0.1:{port}/db (schema lockgate) is unreachable"
    assert status.returncode == 6
    assert message in status.stderr.decode()
    assert "start PostgreSQL there, or fix storage.dsn" in status.stderr.decode()
    assert doctor.returncode == 1
    assert f"  - storage: {message}" in doctor.stdout.decode()
    for output in (status.stdout, status.stderr, doctor.stdout, doctor.stderr):
        assert b"hunter2" not in output


async def test_a_newer_schema_is_refused_naming_both_versions_and_doctor_wants_a_shared_key(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as schema:
        config = _config(tmp_path, schema, sealed=False)
        await Database(pg_settings(schema)).migrate()
        conn = await asyncpg.connect(PG_DSN)
        await conn.execute(f'INSERT INTO "{schema}".schema_version (version) VALUES (7)')
        await conn.close()
        status = await lockgate("db", "status", "-c", config)
        checks = {check.name: check for check in await diagnose(config)}
        with pytest.raises(PendingStoreError, match="schema version 7; this lockgate knows ver"):
            async with Gateway.from_config(config):
                pass
    assert status.returncode == 1
    newer_text = f"schema version 7 is newer than this lockgate (knows up to {SCHEMA_VERSION})"
    assert newer_text in status.stdout.decode()
    newer, unsealed = checks["storage"].problems
    assert newer == status.stdout.decode().strip()
    assert unsealed.startswith("approvals.request_state_key is unset: each replica seals")


async def test_a_schema_at_version_1_is_migrated_and_keeps_its_sessions_and_events() -> None:
    async with fresh_schema() as schema:
        conn = await asyncpg.connect(PG_DSN)
        try:
            await _schema_at_version_1(conn, schema)
            assert await migrate(conn, schema, "test") == (1, SCHEMA_VERSION)
            state = await conn.fetchval(f'SELECT state::text FROM "{schema}".sessions')
            body = await conn.fetchval(f'SELECT body::text FROM "{schema}".events')
            await conn.execute(f'SET search_path TO "{schema}"')
            appended = await conn.fetch(
                "SELECT * FROM append_events($1, 'r', $2::json[], 'c', 't', 0, 10)",
                ["e-2"],
                ['{"id": "e-2"}'],
            )
        finally:
            await conn.close()
    assert state == '{"calls": 3}'
    assert body == '{"id": "e-1"}'
    assert [row[1] for row in appended] == ["e-1", "e-2"]


async def _schema_at_version_1(conn: asyncpg.Connection, schema: str) -> None:
    """``schema`` as version 1 made it, with a session and an event in it."""
    await conn.execute(f'CREATE SCHEMA "{schema}"')
    await conn.execute(f'SET search_path TO "{schema}"')
    for statement in MIGRATIONS[0]:
        await conn.execute(statement)
    await conn.execute(
        "CREATE TABLE schema_version (version integer PRIMARY KEY, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    await conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    await conn.execute("INSERT INTO sessions VALUES ('k', 1, 0, '{\"calls\": 3}')")
    await conn.execute("""SELECT append_events('{e-1}', 'r', ARRAY['{"id": "e-1"}'::jsonb], 'c')""")
    await conn.execute("RESET search_path")
