"""PostgreSQL for tests: the local server (127.0.0.1:5432, trust auth), a fresh schema each.

`scripts/test` starts the server when it is not running; nothing is skipped without it. A test
that stops its database starts a `PrivateCluster` of its own (``initdb`` on a free port) instead
of stopping the shared server.
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.abc
import asyncpg
from anyio.abc import SocketStream

from gateway.postgres.settings import PostgresSettings

PG_DSN = os.environ.get("LOCKGATE_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
"""The test server (override with LOCKGATE_TEST_DSN)."""


def pg_settings(schema: str, **overrides: Any) -> PostgresSettings:
    """Settings for ``schema`` on the test server."""
    return PostgresSettings(dsn=PG_DSN, schema=schema, **overrides)


def pg_storage(schema: str, **overrides: Any) -> dict[str, Any]:
    """The config file's ``storage`` section for ``schema`` on the test server."""
    return {"backend": "postgres", "dsn": PG_DSN, "schema": schema} | overrides


@contextlib.asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """A new, empty schema name ``lockgate_test_<random>``, dropped (with its tables) after."""
    name = f"lockgate_test_{secrets.token_hex(6)}"
    try:
        yield name
    finally:
        await drop_schema(name)


async def drop_schema(name: str) -> None:
    """Drop schema ``name`` and its tables, if it exists."""
    conn = await asyncpg.connect(PG_DSN)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        await conn.close()


async def restart_postgres() -> None:
    """Restart the local PostgreSQL cluster (every connection to it breaks)."""
    version = sorted(os.listdir("/etc/postgresql"))[-1]
    command = ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]
    await anyio.run_process(command)


class CuttableLink:
    """A TCP link 127.0.0.1:``port`` -> the test server that a test cuts and restores, to play a
    database outage without stopping the server others use."""

    def __init__(self) -> None:
        self.port = 0
        self._cut = False
        self._links: set[anyio.CancelScope] = set()

    @property
    def dsn(self) -> str:
        """The test server's URL through this link."""
        parts = urlsplit(PG_DSN)
        return urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{self.port}"))

    def cut(self) -> None:
        """Break every connection through the link and refuse new ones."""
        self._cut = True
        for scope in self._links:
            scope.cancel()

    def restore(self) -> None:
        """Let connections through again."""
        self._cut = False

    async def _handle(self, client: SocketStream) -> None:
        parts = urlsplit(PG_DSN)
        async with client:
            if self._cut:
                return
            async with await anyio.connect_tcp(
                parts.hostname or "127.0.0.1", parts.port or 5432
            ) as server:
                with anyio.CancelScope() as scope:
                    self._links.add(scope)
                    try:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(_pump, client, server, tg.cancel_scope)
                            await _pump(server, client, tg.cancel_scope)
                    finally:
                        self._links.discard(scope)


async def _pump(source: SocketStream, sink: SocketStream, done: anyio.CancelScope) -> None:
    with contextlib.suppress(
        anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError
    ):
        while True:
            await sink.send(await source.receive())
    done.cancel()


@contextlib.asynccontextmanager
async def cuttable_link() -> AsyncIterator[CuttableLink]:
    """A `CuttableLink` serving while inside."""
    link = CuttableLink()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    link.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, link._handle)
        try:
            yield link
        finally:
            link.cut()
            tg.cancel_scope.cancel()


class PrivateCluster:
    """A PostgreSQL cluster of a test's own (``initdb`` in a temporary folder, trust auth, a
    free port), that the test may stop and start without touching the shared test server."""

    def __init__(self, directory: Path, port: int) -> None:
        self.directory = directory
        self.port = port

    @property
    def dsn(self) -> str:
        """The cluster's URL."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    async def start(self) -> None:
        """Start the server (on the same port each time) and wait until it accepts."""
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1"
        await _as_postgres("pg_ctl", "-D", str(self.directory), "-o", options, "-w", "start")

    async def stop(self) -> None:
        """Stop the server at once (``-m fast``): every connection to it breaks."""
        await _as_postgres("pg_ctl", "-D", str(self.directory), "-m", "fast", "-w", "stop")


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else name


async def _as_postgres(tool: str, *args: str) -> None:
    """Run PostgreSQL's ``tool`` (as the ``postgres`` user when we are root)."""
    command = [_pg_bin(tool), *args]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    await anyio.run_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@contextlib.asynccontextmanager
async def private_cluster(port: int) -> AsyncIterator[PrivateCluster]:
    """A `PrivateCluster` on ``port``, started; stopped and removed after."""
    with tempfile.TemporaryDirectory(prefix="lockgate-pg-") as tmp:
        directory = Path(tmp) / "data"
        if os.geteuid() == 0:
            shutil.chown(tmp, user="postgres", group="postgres")
        await _as_postgres("initdb", "-D", str(directory), "-A", "trust", "-U", "postgres")
        cluster = PrivateCluster(directory, port)
        await cluster.start()
        try:
            yield cluster
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(subprocess.CalledProcessError):
                await cluster.stop()
